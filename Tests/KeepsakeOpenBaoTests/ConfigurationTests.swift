import Foundation
import Keepsake
import Testing

@testable import KeepsakeOpenBao

/// What needs no server: the URI and the entry names (docs/FORMAT.md §12).
@Suite("OpenBao URIs and entry names")
struct ConfigurationTests {
    @Test("a URI's parts and parameters")
    func parsesURI() throws {
        let configuration = try OpenBaoConfiguration(
            parsing:
                "openbao://bao.internal:8300/secret/myapp/records?cacert=/etc/ca.pem&role_id_file=/r&secret_id_file=/s&timeout=2.5&poll_interval=0.2",
            environment: [:])
        #expect(configuration.host == "bao.internal")
        #expect(configuration.port == 8300)
        #expect(configuration.mount == "secret")
        #expect(configuration.prefix == "myapp/records")
        #expect(configuration.caCertificateFile == "/etc/ca.pem")
        #expect(configuration.authentication == .appRole(mount: "approle", roleIDFile: "/r", secretIDFile: "/s"))
        #expect(configuration.timeout == .milliseconds(2500))
        #expect(configuration.pollInterval == .milliseconds(200))
        #expect(configuration.connectTimeout == .seconds(5))
        #expect(configuration.uri == "openbao://bao.internal:8300/secret/myapp/records")
        #expect(configuration.baseURL == "https://bao.internal:8300/v1/")
        let vault = try OpenBaoConfiguration(parsing: "vault://[::1]/kv", environment: ["VAULT_TOKEN": "x"])
        #expect(vault.port == 8200 && vault.host == "::1" && vault.prefix == "")
        #expect(vault.authentication == .tokenEnvironment("VAULT_TOKEN"))
        #expect(vault.uri == "vault://[::1]:8200/kv")
        let plain = try OpenBaoConfiguration(
            parsing: "openbao://127.0.0.1:8200/secret?tls=disable&token_file=/t", environment: [:])
        #expect(plain.baseURL == "http://127.0.0.1:8200/v1/")
    }

    @Test(
        "a URI that is wrong, ambiguous or holds a secret is refused, naming what is wrong and never showing the secret",
        arguments: [
            ("openbao://h/secret?token=s.hunter2", "token_file"),
            ("openbao://h/secret?secret_id=abc123", "secret_id_file"),
            ("openbao://h/secret?token_file=/a&role_id_file=/b&secret_id_file=/c", "one way to log in"),
            ("openbao://h/secret?role_id_file=/b", "both role_id_file and secret_id_file"),
            ("openbao://h/secret?token_file=/a&colour=red", "unknown parameter 'colour'"),
            ("openbao://h/secret?token_file=/a&timeout=0", "timeout=0"),
            ("openbao://h/secret?token_file=/a&timeout=nan", "timeout=nan"),
            ("openbao://h/secret?token_file=/a&tls=disable", "loopback"),
            ("openbao://h:0/secret?token_file=/a", "port"),
            ("openbao://h:99999/secret?token_file=/a", "port"),
            ("openbao://h/?token_file=/a", "no mount"),
            ("openbao://h/secret/../x?token_file=/a", "'..'"),
            ("openbao://h/sec%2Fret?token_file=/a", "'sec%2Fret'"),
            ("openbao://user@h/secret", "credentials"),
            ("openbao://h/secret", "no credentials"),
            ("openbao:h/secret", "//"),
            ("openbao://h/secret?token_file=/a&token_file=/b", "twice")
        ])
    func refusesURI(_ text: String, _ named: String) throws {
        do {
            _ = try OpenBaoConfiguration(parsing: text, environment: [:])
            Issue.record("\(text) was taken")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(named), "\(error.message)")
            #expect(!"\(error)".contains("hunter2") && !"\(error)".contains("abc123"))
        }
    }

    @Test("entry names: one path segment per key, exactly one name per key, and back")
    func entryNames() {
        let vectors = [
            ("tenant-42", "tenant-42"), ("a/b", "a=2Fb"), ("..", "=2E."), (".", "=2E"), ("ü", "=C3=BC"),
            ("a=b", "a=3Db"), ("%2F", "=252F"), ("sp ace", "sp=20ace"), ("v1.2", "v1.2"), ("/", "=2F"),
            ("nul\u{0}", "nul=00"), ("👋", "=F0=9F=91=8B")
        ]
        for (key, name) in vectors {
            #expect(EntryName.encode(key) == name, "\(key)")
            #expect(EntryName.decode(name) == key, "\(name)")
        }
        // Names not written the one way a key is are no key's.
        for name in ["a=2fb", "a=2", "a=ZZ", "=", "a b", ".x", "=C3", "=FF", "", "a/b"] {
            #expect(EntryName.decode(name) == nil, "\(name)")
        }
        // Every name is a plain segment, whatever the key.
        for key in ["../../etc", "a/../b", "//", "?#&", String(repeating: ".", count: 5)] {
            let name = EntryName.encode(key)
            #expect(!name.contains("/") && name != "." && name != ".." && !name.hasPrefix("."), "\(name)")
            #expect(EntryName.decode(name) == key)
        }
    }
}

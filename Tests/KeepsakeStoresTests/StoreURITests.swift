import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeMemory
import KeepsakeSodium
import KeepsakeStores
import Testing

@Suite("Store URIs")
struct StoreURITests {
    let home = ["HOME": "/home/ada"]

    /// The error `text` is refused with.
    func refusal(_ text: String, environment: [String: String] = ["HOME": "/home/ada"]) -> KeepsakeError? {
        do {
            let uri = try StoreURI(parsing: text, environment: environment)
            Issue.record("'\(text)' parsed as \(uri)")
            return nil
        } catch {
            return error
        }
    }

    @Test(
        "each scheme parses into its kind and location, and prints back as given",
        arguments: [
            ("defaults:/var/lib/app/settings.json", StoreURI.Scheme.defaults, "/var/lib/app/settings.json"),
            ("defaults:suite.json", .defaults, "suite.json"),
            ("file:/var/lib/app/records", .file, "/var/lib/app/records"),
            ("keyring:com.example.app", .keyring, "com.example.app"),
            ("memory:previews", .memory, "previews"),
            ("defaults:C:/odd:name.json", .defaults, "C:/odd:name.json")
        ])
    func valid(_ text: String, _ scheme: StoreURI.Scheme, _ location: String) throws {
        let uri = try StoreURI(parsing: text, environment: home)
        #expect(uri.scheme == scheme)
        #expect(uri.location == location)
        #expect(uri.description == text)
        #expect(StoreURI(text) == uri)
    }

    @Test(
        "a leading ~/ of a path is expanded against HOME; a keyring service is kept as written",
        arguments: [
            ("defaults:~/settings.json", ["HOME": "/home/ada"], "/home/ada/settings.json"),
            ("file:~/records", ["HOME": "/home/ada/"], "/home/ada/records"),
            ("file:~", ["HOME": "/home/ada"], "/home/ada"),
            ("defaults:~/s.json", ["HOME": "/"], "/s.json"),
            ("defaults:~ada/s.json", ["HOME": "/home/ada"], "~ada/s.json"),
            ("defaults:/srv/~/s.json", ["HOME": "/home/ada"], "/srv/~/s.json"),
            ("keyring:~/service", ["HOME": "/home/ada"], "~/service")
        ])
    func tildeExpansion(_ text: String, _ environment: [String: String], _ location: String) throws {
        let uri = try StoreURI(parsing: text, environment: environment)
        #expect(uri.location == location)
        #expect(uri.description == "\(uri.scheme):\(location)")
        #expect(try StoreURI(parsing: uri.description, environment: [:]) == uri, "the canonical text parses back")
    }

    @Test(
        "an unknown scheme is refused, naming it and the valid forms",
        arguments: ["sqlite:x.db", "Defaults:x.json", "http://example.com"])
    func unknownScheme(_ text: String) throws {
        let error = try #require(refusal(text))
        #expect(error.code == .invalidArgument)
        let scheme = String(text.prefix { $0 != ":" })
        #expect(
            error.message == """
                unknown store kind '\(scheme)'; a store URI is defaults:PATH, file:DIR, keyring:SERVICE or memory:NAME \
                (a PATH or DIR may start with ~/)
                """)
        #expect(StoreURI(text) == nil)
    }

    @Test("text without a colon is refused, showing what a URI looks like")
    func noColon() throws {
        let error = try #require(refusal("settings.json"))
        #expect(error.code == .invalidArgument)
        #expect(error.message.hasPrefix("'settings.json' is not a store URI; a store URI is defaults:PATH, file:DIR"))
    }

    @Test(
        "an empty location is refused, with the form for that scheme",
        arguments: [
            ("defaults:", "defaults:PATH"), ("file:", "file:DIR"), ("keyring:", "keyring:SERVICE"),
            ("memory:", "memory:NAME")
        ])
    func emptyLocation(_ text: String, _ form: String) throws {
        let error = try #require(refusal(text))
        #expect(error.code == .invalidArgument)
        #expect(error.message == "'\(text)' has no location after the colon; write \(form)")
    }

    @Test("~/ without HOME, and NUL anywhere, are refused")
    func otherRefusals() throws {
        let noHome = try #require(refusal("defaults:~/s.json", environment: [:]))
        #expect(noHome.code == .invalidArgument)
        #expect(noHome.message.contains("HOME is not set"))
        #expect(refusal("file:~/r", environment: ["HOME": ""])?.code == .invalidArgument)
        #expect(refusal("keyring:a\u{0}b")?.code == .invalidArgument)
    }

    @Test("equal URIs hash alike; a different scheme or location is a different URI")
    func equality() throws {
        let a = try StoreURI(parsing: "defaults:~/s.json", environment: home)
        let b = try StoreURI(parsing: "defaults:/home/ada/s.json", environment: home)
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(try StoreURI(parsing: "file:/home/ada/s.json") != a)
        #expect(try StoreURI(parsing: "defaults:/home/ada/t.json") != a)
    }

    /// A store kind of an app's own, for the registry tests.
    struct FolderBackend: StoreBackend {
        var scheme: StoreURI.Scheme = "folder"
        let locationName = "DIR"
        let summary = "one plain file per record"
        var locationIsPath: Bool { true }
        func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
            InMemoryStore(name: uri.location)
        }
    }

    @Test("an app's own backend parses and opens beside the standard ones; a taken scheme is refused")
    func addedBackend() throws {
        let backends = try StoreBackends.standard.adding(FolderBackend())
        let store = try backends.open("folder:~/records")
        #expect(store.uri.hasPrefix("memory:") && store.uri.hasSuffix("/records"))
        let uri = try backends.parse("folder:~/records", environment: home)
        #expect(uri.scheme.rawValue == "folder" && uri.location == "/home/ada/records")
        #expect(try backends.open(uri).uri == "memory:/home/ada/records")
        #expect(throws: KeepsakeError.self) { try StoreURI(parsing: "folder:x") }
        let refusal = #expect(throws: KeepsakeError.self) { try backends.parse("sqlite:x") }
        #expect(refusal?.message.contains("folder:DIR") == true)
        let taken = #expect(throws: KeepsakeError.self) {
            try StoreBackends.standard.adding(FolderBackend(scheme: "file"))
        }
        #expect(taken?.message == "two store backends share the scheme 'file'")
        #expect(throws: KeepsakeError.self) { try StoreBackends.standard.adding(FolderBackend(scheme: "1x")) }
        // An option no backend of that kind takes is refused, naming the kinds that take it.
        let unused = #expect(throws: KeepsakeError.self) {
            try backends.open(uri, options: StoreOpenOptions(masterKey: .keyFile(path: "/k")))
        }
        #expect(unused?.message.hasPrefix("the option masterKey applies only to file: stores") == true)
    }
}

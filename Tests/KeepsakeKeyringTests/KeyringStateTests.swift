import Foundation
import Keepsake
import KeepsakeKeyring
import Testing

extension KeyringTests {
    /// Locked, unavailable and hung keyrings: errors, never "absent", and on time.
    @Suite("Locked, unavailable and hung keyrings")
    struct States {
        @Test("the private keyring is diagnosed usable, and open succeeds")
        func usable() throws {
            let diagnosis = KeyringStore.diagnose(timeout: .seconds(5))
            #expect(diagnosis.status == .usable)
            #expect(diagnosis.isUsable)
            #expect(diagnosis.error == nil)
            #expect(diagnosis.defaultCollection == (try PrivateKeyring.collection))
            let store = try KeyringStore.open(service: "org.keepsake.test.open", timeout: .seconds(3))
            #expect(store.uri == "keyring:org.keepsake.test.open")
            #expect(store.timeout == .seconds(3))
        }

        @Test("a locked collection is reported as locked by every call, never as absent, and nothing is written")
        func locked() throws {
            let store = try PrivateKeyring.freshStore("locked")
            let stored = Data(#"{"version":0,"startDate":700000000}"#.utf8)
            try store.setData(stored, forKey: "trialInfo")

            try PrivateKeyring.whileLocked {
                let diagnosis = KeyringStore.diagnose(timeout: .seconds(5))
                #expect(diagnosis.status == .locked)
                #expect(diagnosis.error?.code == .locked)
                #expect(diagnosis.defaultCollection == (try PrivateKeyring.collection))

                let openError = try #require(throws: KeepsakeError.self) {
                    _ = try KeyringStore.open(service: store.service)
                }
                #expect(openError.code == .locked)
                #expect(openError.store == store.uri)

                for key in ["trialInfo", "never-stored"] {
                    let error = try #require(throws: KeepsakeError.self, "reading \(key)") {
                        _ = try store.data(forKey: key)
                    }
                    #expect(error.code == .locked, "reading \(key) gave \(error)")
                    #expect(error.store == store.uri)
                    #expect(error.key == key)
                }
                let keysError = try #require(throws: KeepsakeError.self) { _ = try store.keys() }
                #expect(keysError.code == .locked)
                let listError = try #require(throws: KeepsakeError.self) { _ = try store.allData() }
                #expect(listError.code == .locked)

                let writeError = try #require(throws: KeepsakeError.self) {
                    try store.setData(Data(#"{"version":0,"startDate":1}"#.utf8), forKey: "trialInfo")
                }
                #expect(writeError.code == .locked)
                let createError = try #require(throws: KeepsakeError.self) {
                    try store.setData(Data("1".utf8), forKey: "new")
                }
                #expect(createError.code == .locked)
                let removeError = try #require(throws: KeepsakeError.self) { try store.removeData(forKey: "trialInfo") }
                #expect(removeError.code == .locked)
            }

            // Unlocked again: nothing was changed while locked.
            #expect(try store.data(forKey: "trialInfo") == stored)
            #expect(try store.keys() == ["trialInfo"])
        }

        @Test(
            "with no session bus every call is unavailable, with GLib's error kept, at once",
            arguments: [true, false])
        func noBus(addressSet: Bool) throws {
            let emptyRuntime = PrivateKeyring.scratch.appendingPathComponent("empty-run-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(
                at: emptyRuntime, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            let address =
                addressSet
                ? "unix:path=\(PrivateKeyring.scratch.path)/no-such-bus-socket" : nil
            let outcomes = try ChildProcess.run(
                environment: [
                    "DBUS_SESSION_BUS_ADDRESS": address, "DISPLAY": nil, "WAYLAND_DISPLAY": nil,
                    "XDG_RUNTIME_DIR": emptyRuntime.path
                ],
                timeoutMilliseconds: 3000)
            try #require(Set(outcomes.keys) == Set(ChildProcess.calls))
            #expect(outcomes["diagnose"]?.status == "noSessionBus", "\(outcomes["diagnose"]!)")
            for call in ChildProcess.calls {
                let outcome = try #require(outcomes[call])
                #expect(outcome.code == "unavailable", "\(call): \(outcome)")
                #expect(outcome.domain == "g-io-error-quark", "\(call): \(outcome)")
                #expect(outcome.causeMessage?.isEmpty == false)
                #expect(outcome.seconds < 2, "\(call) took \(outcome.seconds) s")
            }
            if addressSet {
                #expect(outcomes["data"]?.causeMessage?.contains("No such file or directory") == true)
            } else {
                #expect(outcomes["data"]?.causeMessage?.contains("DISPLAY") == true, "\(outcomes["data"]!)")
            }
            #expect(outcomes["data"]?.store == "keyring:org.keepsake.test.child")
            #expect(outcomes["data"]?.key == "trialInfo")
        }

        @Test(
            "inside a Flatpak or Snap with no Secret Service reachable, diagnose and the trial guard say what to request",
            arguments: [["FLATPAK_ID": "org.example.Notes"], ["SNAP": "/snap/notes/3", "SNAP_NAME": "notes"]])
        func sandboxed(_ sandbox: [String: String]) throws {
            let bus = try PrivateBus()
            defer { bus.stop() }
            var environment: [String: String?] = ["DBUS_SESSION_BUS_ADDRESS": bus.address]
            for (name, value) in sandbox { environment[name] = value }
            let outcomes = try ChildProcess.run(environment: environment, timeoutMilliseconds: 3000)
            let request =
                sandbox["SNAP"] == nil
                ? "--talk-name=org.freedesktop.secrets" : "snap connect notes:password-manager-service"
            for call in ["diagnose", "trial"] {
                let outcome = try #require(outcomes[call])
                #expect(outcome.code == "unavailable", "\(call): \(outcome)")
                #expect(outcome.message?.contains(request) == true, "\(call): \(outcome)")
            }
            // The store's own errors stay as they were: the guard and doctor explain.
            #expect(outcomes["data"]?.message?.contains(request) == false)
        }

        @Test("with a bus but no Secret Service every call is unavailable, with the D-Bus error kept")
        func noProvider() throws {
            let bus = try PrivateBus()
            defer { bus.stop() }
            let outcomes = try ChildProcess.run(
                environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address], timeoutMilliseconds: 3000)
            try #require(Set(outcomes.keys) == Set(ChildProcess.calls))
            #expect(outcomes["diagnose"]?.status == "noProvider", "\(outcomes["diagnose"]!)")
            for call in ChildProcess.calls {
                let outcome = try #require(outcomes[call])
                #expect(outcome.code == "unavailable", "\(call): \(outcome)")
                #expect(outcome.domain == "g-dbus-error-quark", "\(call): \(outcome)")
                #expect(outcome.causeCode == 2, "org.freedesktop.DBus.Error.ServiceUnknown: \(outcome)")
                #expect(outcome.causeMessage?.contains("org.freedesktop.secrets") == true)
                #expect(outcome.seconds < 2, "\(call) took \(outcome.seconds) s")
            }
        }

        @Test("a provider that never answers gives a timeout error on time, not after 25–50 s")
        func hungProvider() throws {
            let bus = try PrivateBus()
            defer { bus.stop() }
            try bus.startHungProvider()
            let outcomes = try ChildProcess.run(
                environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address], timeoutMilliseconds: 1000)
            try #require(Set(outcomes.keys) == Set(ChildProcess.calls))
            #expect(outcomes["diagnose"]?.status == "timedOut", "\(outcomes["diagnose"]!)")
            for call in ChildProcess.calls {
                let outcome = try #require(outcomes[call])
                #expect(outcome.code == "timeout", "\(call): \(outcome)")
                // Our deadline's GCancellable: G_IO_ERROR_CANCELLED.
                #expect(outcome.domain == "g-io-error-quark" && outcome.causeCode == 19, "\(call): \(outcome)")
                #expect(outcome.seconds >= 0.9, "\(call) returned before its deadline: \(outcome.seconds) s")
                #expect(outcome.seconds < 4, "\(call) overran its 1 s deadline: \(outcome.seconds) s")
            }
        }
    }
}

import Foundation

// Whether a private keyring can run here: the tools, and no session bus it did not start.

extension TestKeyring {
    /// Why a private keyring cannot be used from a process with `environment`, or `nil` when
    /// ``shared()`` can attach to one or start one: the tools are missing (with the Debian
    /// packages to install), or a session bus this library did not start is reachable.
    ///
    /// Cheap and side-effect free (it only looks at the environment and `PATH`): meant for a
    /// suite's `.enabled(if:)` trait, so that a test skips with this reason.
    public static func unavailableReason(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        let provider: Provider
        do throws(TestKeyringError) {
            provider = try Provider.chosen(in: environment)
        } catch {
            return error.message
        }
        if let missing = missingTools(path: environment["PATH"], provider: provider) { return missing.message }
        if environment[Variable.inside] == "1" {
            do throws(TestKeyringError) {
                _ = try validateHarness(environment)
                return nil
            } catch {
                return error.message
            }
        }
        return realSession(environment)?.message
    }

    static func missingTools(path: String?, provider: Provider) -> TestKeyringError? {
        var missing = Tools.names(provider).filter { Subprocess.which($0, path: path) == nil }
        if let plugin = provider.missingPlugin { missing.append(plugin) }
        guard !missing.isEmpty else { return nil }
        return TestKeyringError(
            .toolsMissing,
            """
            \(missing.joined(separator: ", ")) not found, so no private keyring with \(provider.displayName) \
            can be started (the keyring tests did not run); on Debian: apt-get install -y \
            --no-install-recommends dbus libglib2.0-bin \(provider.debianPackages.joined(separator: " "))
            """)
    }

    static func findTools(path: String?, provider: Provider) throws(TestKeyringError) -> Tools {
        if let missing = missingTools(path: path, provider: provider) { throw missing }
        // Checked just above: every tool was found.
        func find(_ name: String) -> String { Subprocess.which(name, path: path) ?? name }
        var programs: [String: String] = [:]
        for name in provider.programs { programs[name] = find(name) }
        return Tools(dbusDaemon: find("dbus-daemon"), gdbus: find("gdbus"), programs: programs)
    }

    /// A session bus reachable from `environment` that is not a private keyring's.
    static func realSession(_ environment: [String: String]) -> TestKeyringError? {
        let advice = """
            run the tests inside a private keyring instead (`keepsake-test-keyring --keep-home -- swift test`), \
            or unset DBUS_SESSION_BUS_ADDRESS and XDG_RUNTIME_DIR for the test run
            """
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty {
            return TestKeyringError(
                .realSession,
                """
                refused: DBUS_SESSION_BUS_ADDRESS points at a session bus this library did not start \
                (\(address)), where the user's own keyring may answer; \(advice)
                """)
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty,
            FileManager.default.fileExists(atPath: runtime + "/bus")
        {
            return TestKeyringError(
                .realSession,
                """
                refused: \(runtime)/bus is a session bus this library did not start (GLib connects to it \
                when DBUS_SESSION_BUS_ADDRESS is unset), where the user's own keyring may answer; \(advice)
                """)
        }
        return nil
    }
}

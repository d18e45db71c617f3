import ArgumentParser
import Testing

@testable import KeepsakeCLI

/// Commands that leave their name to ArgumentParser, which derives it from the type's name.
private enum Named {
    struct Status: ParsableCommand {}
    struct KeyCensus: ParsableCommand {}
    struct URLCheck: ParsableCommand {}
    struct Rekey2Go: ParsableCommand {}
    struct ShowJSONOutput: ParsableCommand {}
}

@Suite("Command names: derived without String(describing:), the same as ArgumentParser's")
struct CommandNameTests {
    @Test(
        "a command's derived name is the one ArgumentParser would give it",
        arguments: [
            (Named.Status.self as any ParsableCommand.Type, "status"),
            (Named.KeyCensus.self, "key-census"),
            (Named.URLCheck.self, "url-check"),
            (Named.Rekey2Go.self, "rekey2-go"),
            (Named.ShowJSONOutput.self, "show-json-output")
        ])
    func derived(_ command: any ParsableCommand.Type, _ expected: String) {
        #expect(command.derivedCommandName == expected)
        // ArgumentParser's own: the configuration names none, so it converts the type's name.
        #expect(command._commandName == expected)
    }

    @Test("every migrate command's configuration names it, as it is typed")
    func configured() {
        let names = Migrate.configuration.subcommands.map { $0.configuration.commandName }
        #expect(names.allSatisfy { $0 != nil })
        #expect(names.contains("status") && names.contains("run") && names.contains("rekey"), "\(names)")
        #expect(Migrate.Trial.configuration.subcommands.map { $0.configuration.commandName } == ["status", "start"])
    }
}

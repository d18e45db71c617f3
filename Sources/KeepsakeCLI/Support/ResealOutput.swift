#if CLI
import Foundation
import ArgumentParser
import Keepsake

/// What `rekey` and `seal` share on a store whose values are sealed under a key set
/// (``ResealableStore``): the re-seal, its progress on the terminal, its report and its exit code.
enum ResealOutput {
    /// Re-seals `store`, drawing progress on standard error when it is a terminal and the
    /// output is for a person, and prints the report; throws the exit code when values are left.
    static func run(
        _ store: any ResealableStore, batchSize: Int, output: OutputOptions, verb: String,
        retiredNote: (String) -> String = {
            "Retired from the table's seal: \($0) — writers holding only that key are refused from now on."
        }
    ) throws {
        let meter =
            ProgressDisplay.isShown(
                standardErrorIsTerminal: standardErrorIsTerminal, json: output.json, quiet: output.quiet)
            ? ProgressMeter() : nil
        let report = try store.reseal(batchSize: batchSize) { progress in
            meter?.update(verb, done: progress.done, total: progress.total)
        }
        let code: ExitCode = report.unreadable > 0 ? Exit.unreadable : report.isComplete ? .success : Exit.temporary
        if output.json {
            printJSON(json(report, store: store, exitCode: code))
        } else {
            let target = store.writtenKeyID == "plain" ? "as plain values" : "under key \(store.writtenKeyID)"
            say(
                "Re-sealed \(report.resealed) values of \(store.uri) \(target)"
                    + (report.changedMeanwhile > 0
                        ? " (\(report.changedMeanwhile) changed by other writers meanwhile keep their own writes)" : "")
                    + ".")
            if !report.retired.isEmpty {
                say(retiredNote(report.retired.joined(separator: ", ")))
            }
            if report.unreadable > 0 {
                say(
                    "\(report.unreadable) values open with no key of this store and were left as they are: "
                        + report.unreadableKeys.joined(separator: ", ") + (report.unreadable > 20 ? ", …" : ""))
            } else if !report.isComplete {
                say("Values under other keys are left (written meanwhile by a writer with an old key): run again.")
            }
            printCensus(report.census)
        }
        if code != .success { throw code }
    }

    /// The census as a table: key, role, values.
    static func printCensus(_ census: KeyCensus) {
        guard !census.entries.isEmpty else {
            say("The store holds no values.")
            return
        }
        printTable(["KEY", "ROLE", "VALUES"], census.entries.map { [$0.keyID, $0.role.rawValue, String($0.count)] })
    }

    static func json(_ census: KeyCensus) -> JSONValue {
        .array(
            census.entries.map { entry in
                ["keyID": .string(entry.keyID), "role": .string(entry.role.rawValue), "count": .int(entry.count)]
            })
    }

    static func json(_ report: ResealReport, store: any ResealableStore, exitCode: ExitCode) -> JSONValue {
        [
            "store": .string(store.uri), "writtenKeyID": .string(store.writtenKeyID),
            "resealed": .int(report.resealed), "changedMeanwhile": .int(report.changedMeanwhile),
            "unreadable": .int(report.unreadable), "unreadableKeys": .array(report.unreadableKeys.map { .string($0) }),
            "retired": .array(report.retired.map { .string($0) }), "complete": .bool(report.isComplete),
            "keys": json(report.census), "exitCode": .int(Int(exitCode.rawValue))
        ]
    }
}
#endif

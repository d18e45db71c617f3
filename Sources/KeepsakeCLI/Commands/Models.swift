#if CLI
import ArgumentParser
import Keepsake

extension Migrate {
    struct Models: OutputCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "List the models this command knows, with their versions and default keys.",
                    usage: "\(CLI.name) models [--json]",
                    discussion: """
                        With --json, an array of models (empty when none is configured); each version also lists its stored keys and the JSON shape of its records.
                        """)
            }
        }

        @OptionGroup var output: OutputOptions

        struct ModelJSON: Encodable {
            struct Version: Encodable {
                let version: Int
                let type: String
                let keys: [String]
                let optionalKeys: [String]
                /// The stored JSON shape, read off the version's `Decodable` conformance; absent
                /// when it cannot be.
                let shape: RecordShape?
            }
            let name: String
            let defaultKeys: [String]
            /// The chain's key patterns (`tenant-*`); absent when it has none.
            let keyPatterns: [String]?
            let latestVersion: Int
            let versions: [Version]
        }

        func run() throws {
            let models = CLI.chains
            if output.json {
                printJSON(
                    models.map { chain in
                        let shapes = chain.shapes
                        return ModelJSON(
                            name: chain.name, defaultKeys: chain.defaultKeys,
                            keyPatterns: chain.keyPatterns.isEmpty ? nil : chain.keyPatterns.map(\.description),
                            latestVersion: chain.latestVersion,
                            versions: chain.versions.map {
                                .init(
                                    version: $0.version, type: $0.typeName,
                                    keys: ($0.storedKeys?.required ?? []).sorted(),
                                    optionalKeys: ($0.storedKeys?.optional ?? []).sorted(),
                                    shape: shapes[$0.version])
                            })
                    })
                return
            }
            if models.isEmpty { say("No models are configured; every record is unmanaged.") }
            for (index, chain) in models.enumerated() {
                if index > 0 { print() }
                var keys =
                    "default keys: \(chain.defaultKeys.isEmpty ? "none" : chain.defaultKeys.joined(separator: ", "))"
                if !chain.keyPatterns.isEmpty {
                    keys += "; key patterns: \(chain.keyPatterns.map(\.description).joined(separator: ", "))"
                }
                say("\(chain.name) — latest v\(chain.latestVersion), \(keys)")
                printTable(
                    ["VERSION", "TYPE", "STORED KEYS"],
                    chain.versions.map {
                        ["v\($0.version)", $0.typeName, $0.storedKeys?.description ?? "(read by decoding)"]
                    })
            }
        }
    }
}
#endif

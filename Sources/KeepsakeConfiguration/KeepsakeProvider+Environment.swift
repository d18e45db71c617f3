#if Configuration
public import Configuration

extension KeepsakeProvider {
    /// Which environment variables override this provider's secret values: give it to the
    /// `EnvironmentVariablesProvider` placed before this provider, so that an override of a
    /// secret is as secret as the stored value it replaces.
    ///
    /// ```swift
    /// let provider = KeepsakeProvider(vault: vault, records: [.init(.apiClient, secretFields: ["token"])])
    /// let config = ConfigReader(providers: [
    ///     EnvironmentVariablesProvider(secretsSpecifier: provider.environmentSecrets),  // API_TOKEN is secret
    ///     provider,
    /// ])
    /// ```
    ///
    /// A variable is secret when it names a secret value or anything under one: every field of a
    /// record on a store encrypted at rest or marked ``Record/isSecret``, and each of a record's
    /// ``Record/secretFields``. Variable names follow `EnvironmentVariablesProvider`'s rule: the
    /// configuration key's components, a word break (`_`) inserted where a lower-case letter is
    /// followed by an upper-case one, in upper case, with every other character than a letter or
    /// digit made `_`, joined by `_` — field `textSize` of the record at `prefs` is
    /// `PREFS_TEXT_SIZE`.
    public var environmentSecrets: SecretsSpecifier<String, String> {
        var names: [String] = []
        for record in records {
            if storeIsSecret || record.isSecret {
                names.append(Self.environmentName(record.prefix))
            } else {
                for field in record.secretFields {
                    names.append(Self.environmentName(record.prefix + field.split(separator: ".").map(String.init)))
                }
            }
        }
        guard !names.isEmpty else { return .none }
        return .dynamic { [names] variable, _ in
            names.contains { variable == $0 || (variable.hasPrefix($0) && variable.dropFirst($0.count).first == "_") }
        }
    }

    /// The environment variable `EnvironmentVariablesProvider` reads for the configuration key
    /// made of `components`.
    static func environmentName(_ components: [String]) -> String {
        components.map { component in
            var words = ""
            var previous: Character?
            for character in component {
                if let previous, previous.isLowercase, character.isUppercase { words.append("_") }
                words.append(character)
                previous = character
            }
            return String(words.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
        }.joined(separator: "_")
    }
}
#endif

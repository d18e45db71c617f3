import Keepsake

/// The TrialInfo model: when a free trial started, kept where a reinstall does not wipe it.
///
/// To add a version: add `TrialInfoV3.swift` with `typealias Predecessor = TrialInfoV2`, then
/// point ``Latest`` at it. No existing version file changes.
public enum TrialInfo {
    /// The version apps read and write.
    public typealias Latest = TrialInfoV2

    /// Versions 0 → 2, stored under `"trialInfo"` by default.
    public static let chain = ModelChain<Latest>(name: "TrialInfo", defaultKeys: ["trialInfo"])
}

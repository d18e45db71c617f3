import Keepsake

/// The sample chains the `migrate` CLI knows.
public enum SampleModels {
    public static let all: [AnyModelChain] = [Person.chain.erased, TrialInfo.chain.erased]
}

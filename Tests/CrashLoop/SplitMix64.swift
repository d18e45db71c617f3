/// SplitMix64 (Steele, Lea and Flood): a small seeded generator, so that `--seed` repeats the
/// delays of a crash loop.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: Int64) { state = UInt64(bitPattern: seed) }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<bound (bound at least 1), as `$RANDOM % bound` was.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(bound, 1))) }
}

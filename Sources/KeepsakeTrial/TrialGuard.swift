import Foundation
import Keepsake
import KeepsakeKeyring
import Migrations

/// Guards a free trial whose start is kept where a reinstall does not wipe it (the keyring).
///
/// The guard reports facts; the app decides what to do with them. It reads the `TrialInfo`
/// record through the engine — an old V0 or V1 record is migrated to V2 and written back, its
/// `startDate` kept exactly — and answers with a ``TrialStatus``. It starts a trial only when
/// asked (``start()``) and only when the store positively reports that no record exists: a
/// locked or unavailable keyring, a corrupt record or one from a newer release is
/// ``TrialStatus/unknown(_:)``, and nothing is written.
///
/// ```swift
/// let guard = TrialGuard(store: keyring, length: .days(14), deviceIdentity: device)
/// switch guard.status() {
/// case .notStarted: showWelcome(); _ = guard.start()
/// case let .active(trial): showBanner(daysLeft: trial.daysLeft)
/// case .expired: showPaywall()
/// case .clockMovedBack, .unknown: showPaywall()  // or retry later: the app decides
/// }
/// ```
///
/// Besides the record, the guard keeps the latest time it has seen under `"<key>.lastSeen"` in
/// the same store (an ISO 8601 string), so that setting the clock back beyond the tolerance is
/// reported as ``TrialStatus/clockMovedBack(lastSeen:now:)`` instead of extending the trial.
/// Dates are absolute instants, so time zone changes do not move them.
public struct TrialGuard: Sendable {
    /// Where the trial record and the latest seen time are kept.
    public let store: any RecordStore
    /// The key of the TrialInfo record (`"trialInfo"`).
    public let key: String
    /// How long a trial lasts.
    public let length: TrialLength
    /// How far the clock may go back before it counts as moved back (clock adjustments, NTP).
    public let rollbackTolerance: TimeInterval
    private let clock: @Sendable () -> Date
    private let deviceIdentity: String

    /// - Parameters:
    ///   - store: Where the record lives; the keyring, so that a reinstall keeps it.
    ///   - key: The record's key.
    ///   - length: The trial's length.
    ///   - rollbackTolerance: How far back the clock may go without being reported (default one hour).
    ///   - deviceIdentity: Stored in new records and by the V0 → V1 step
    ///     (see `DeviceIdentity.derived(appID:)`).
    ///   - clock: The current time; injected in tests.
    public init(
        store: any RecordStore,
        key: String = "trialInfo",
        length: TrialLength,
        rollbackTolerance: TimeInterval = 3600,
        deviceIdentity: String,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.key = key
        self.length = length
        self.rollbackTolerance = rollbackTolerance
        self.deviceIdentity = deviceIdentity
        self.clock = clock
    }

    /// The key the latest seen time is kept under.
    public var lastSeenKey: String { key + ".lastSeen" }

    /// The trial's state now. Migrates an old record and writes it back; records the time seen.
    ///
    /// Never starts a trial and never overwrites a record it cannot read.
    public func status() -> TrialStatus {
        Log.trial.reported(evaluate(startIfAbsent: false), store: store.uri, key: key)
    }

    /// Starts the trial now if, and only if, the store reports no record; otherwise reports the
    /// existing trial's state, unchanged.
    ///
    /// The new record is TrialInfo V2 with `startDate` = now and this device's identity, written
    /// only if the key is still absent at the moment of writing: one create-if-absent write
    /// (expectation `.unchanged(nil)`), which every store makes atomically among Keepsake's
    /// writers. When several launches start the trial at once — threads of one process, several
    /// processes — exactly one record is written, and every one of them reports that one's start:
    /// a launch whose write finds the key taken reads the record stored and reports it.
    ///
    /// Never answers ``TrialStatus/notStarted``. A failure that may pass (a timeout, another
    /// writer holding the store's lock, a write that kept conflicting) is tried again, up to
    /// ``startAttempts`` times in all, before ``TrialStatus/unknown(_:)``.
    public func start() -> TrialStatus {
        var attempt = 1
        while true {
            let status = evaluate(startIfAbsent: true)
            guard case let .unknown(error) = status, Self.mayPass(error), attempt < Self.startAttempts else {
                return Log.trial.reported(status, store: store.uri, key: key)
            }
            Log.trial.debug(
                "starting the trial failed in a way that may pass; trying again",
                metadata: ["store": "\(store.uri)", "key": "\(key)", "error": "\(error.code.rawValue)"])
            attempt += 1
        }
    }

    /// How many times ``start()`` tries before it reports a failure that may pass.
    public static let startAttempts = 3

    /// Whether `error` may not happen again on a second try.
    private static func mayPass(_ error: KeepsakeError) -> Bool {
        [.timeout, .lockTimeout, .conflict, .io].contains(error.code)
    }

    private func evaluate(startIfAbsent: Bool) -> TrialStatus {
        let now = clock()
        do throws(ISO8601.Failure) {
            try ISO8601.check(now)
        } catch {
            return .unknown(
                KeepsakeError(
                    .invalidArgument, store: store.uri, key: key,
                    "the clock cannot be used: \(error.reason); nothing was read or written"))
        }
        let context = MigrationContext(
            clock: clock, makeIdentifier: { UUID().uuidString }, deviceIdentity: deviceIdentity)
        do throws(KeepsakeError) {
            let lastSeen = try readLastSeen()
            if let lastSeen, lastSeen.timeIntervalSince(now) > rollbackTolerance {
                return .clockMovedBack(lastSeen: lastSeen, now: now)
            }
            let record: TrialInfoV2
            let vault = Vault(store: store, context: context)
            switch try vault.load(TrialInfo.chain, forKey: key) {
            case nil:
                if let lastSeen {
                    // This store saw a trial before: the record was deleted, not never written.
                    return .unknown(
                        KeepsakeError(
                            .trialRecordRemoved, store: store.uri, key: key,
                            """
                            the trial record is missing, but this store saw a trial until \(TrialGuard.format(lastSeen)); \
                            it was removed, so the trial is not started again
                            """))
                }
                guard startIfAbsent else { return .notStarted }
                let started = TrialInfoV2(startDate: now, deviceId: deviceIdentity)
                let bytes = try TrialInfo.chain.encode(started)
                // Create-if-absent: written only if the key still holds nothing.
                let results = try store.commit([StoreWrite(key: key, value: bytes, expectation: .unchanged(nil))])
                switch results.first {
                case .applied?:
                    // Reported as stored (the date as precise as the record keeps it), as every other launch
                    // that finds it reports it.
                    record = try vault.load(TrialInfo.chain, forKey: key)?.value ?? started
                    Log.trial.debug("trial started", metadata: ["store": "\(store.uri)", "key": "\(key)"])
                case .conflict?:
                    // Another launch started it meanwhile: its record is the trial.
                    guard let theirs = try vault.load(TrialInfo.chain, forKey: key) else {
                        throw KeepsakeError(
                            .conflict, store: store.uri, key: key,
                            "another writer stored a trial record and it was gone again when it was read")
                    }
                    record = theirs.value
                case let .failed(error)?:
                    throw error
                case nil:
                    throw KeepsakeError(
                        .io, store: store.uri, key: key, "the store reported nothing for the trial record's write")
                }
            case let loaded?:
                // A migrated record whose write-back failed is still the trial's record: the
                // start date is what matters, and the next status migrates it again.
                record = loaded.value
            }
            if record.startDate.timeIntervalSince(now) > rollbackTolerance {
                return .clockMovedBack(lastSeen: record.startDate, now: now)
            }
            try recordSeen(now, previous: lastSeen)
            return TrialStatus(start: record.startDate, length: length, now: now)
        } catch {
            return .unknown(explained(error))
        }
    }

    /// `error`, its message ending with what the sandbox requires when the keyring cannot be
    /// reached from inside Flatpak or Snap.
    private func explained(_ error: KeepsakeError) -> KeepsakeError {
        guard let keyring = store as? any SandboxedStore, keyring.sandbox.kind != .none,
            [.unavailable, .timeout].contains(error.code)
        else { return error }
        var explained = error
        explained.message += " (\(keyring.sandbox.secretServiceNote))"
        return explained
    }

    /// Whether the trial record outlives an uninstall of the app here: the store survives a
    /// reinstall (the keyring does; inside a Flatpak that was not granted the Secret Service it
    /// cannot even be reached, and does not).
    public var survivesReinstall: Bool { store.capabilities.contains(.survivesReinstall) }

    /// The sandbox the guard's store runs in (`Sandbox.unconfined` for a store that is not
    /// the keyring), with what the app must request there and what survives a reinstall.
    public var sandbox: Sandbox { (store as? any SandboxedStore)?.sandbox ?? .unconfined }

    /// The latest time seen, a JSON string holding an ISO 8601 date; a value that is not one,
    /// or a date outside the years 0001–9999, is `.corruptRecord`.
    private func readLastSeen() throws(KeepsakeError) -> Date? {
        guard let bytes = try store.data(forKey: lastSeenKey) else { return nil }
        let corrupt = { (reason: String) in
            KeepsakeError(
                .corruptRecord, store: store.uri, key: lastSeenKey,
                "the latest seen time is not an ISO 8601 date string", cause: .other(reason))
        }
        guard let text = String(data: bytes, encoding: .utf8), text.utf8.count > 2,
            text.utf8.first == UInt8(ascii: "\""), text.utf8.last == UInt8(ascii: "\"")
        else { throw corrupt("not a JSON string") }
        do throws(ISO8601.Failure) {
            return try ISO8601.date(from: String(text.dropFirst().dropLast()))
        } catch {
            throw corrupt(error.reason)
        }
    }

    /// Moves the high-water mark forward (never back), at most once a minute.
    private func recordSeen(_ now: Date, previous: Date?) throws(KeepsakeError) {
        if let previous, now.timeIntervalSince(previous) < 60 { return }
        let text = "\"" + TrialGuard.format(now) + "\""
        let expectation: StoreWrite.Expectation = previous.map { _ in .anything } ?? .unchanged(nil)
        _ = try store.commit([StoreWrite(key: lastSeenKey, value: Data(text.utf8), expectation: expectation)])
    }

    /// `2026-01-31T12:00:00.250Z`, to the millisecond (rounded down), as earlier releases wrote
    /// and read it. `date` is a time the clock gave, checked to be in the years 0001–9999.
    static func format(_ date: Date) -> String {
        do throws(ISO8601.Failure) {
            return try ISO8601.millisecondString(from: date)
        } catch {
            preconditionFailure("TrialGuard: the clock was checked to be in range (\(error.reason))")
        }
    }
}

extension KeepsakeError.Code {
    /// The trial record is gone but the store still holds the time the guard last saw, so the
    /// record was deleted: the guard reports ``TrialStatus/unknown(_:)`` and does not restart.
    public static let trialRecordRemoved = KeepsakeError.Code(rawValue: "trialRecordRemoved")
}

/// How long a trial lasts.
public struct TrialLength: Sendable, Hashable {
    /// The length in seconds.
    public let seconds: TimeInterval

    /// A length of `seconds` seconds.
    ///
    /// - Precondition: `seconds` is greater than zero.
    public init(seconds: TimeInterval) {
        precondition(seconds > 0, "a trial must last some time")
        self.seconds = seconds
    }

    /// `days` days of 24 hours.
    public static func days(_ days: Int) -> TrialLength { TrialLength(seconds: TimeInterval(days) * 86_400) }
}

/// What the ``TrialGuard`` knows about the trial.
public enum TrialStatus: Sendable, Equatable {
    /// No trial record exists: the store positively said so.
    case notStarted
    /// The trial runs.
    case active(ActiveTrial)
    /// The trial ended at `since`.
    case expired(since: Date, start: Date)
    /// The clock is earlier than a time already seen (or than the trial's start) by more than
    /// the tolerance; the trial is not extended.
    case clockMovedBack(lastSeen: Date, now: Date)
    /// The trial's state cannot be known: the store is locked or unavailable, the record is
    /// corrupt (a start date outside the years 0001–9999 among them), unrecognised or from a
    /// newer release, or the clock reads a time outside 0001–9999. Nothing was written.
    case unknown(KeepsakeError)

    init(start: Date, length: TrialLength, now: Date) {
        let end = start.addingTimeInterval(length.seconds)
        if now >= end {
            self = .expired(since: end, start: start)
        } else {
            let left = end.timeIntervalSince(now)
            // A very long trial has more days left than an Int holds: saturate, never trap.
            let days = (left / 86_400).rounded(.down)
            let daysLeft = days < Double(Int.max) ? Int(days) : Int.max
            self = .active(ActiveTrial(start: start, expiresAt: end, timeLeft: left, daysLeft: daysLeft))
        }
    }

    /// A running trial.
    public struct ActiveTrial: Sendable, Equatable {
        /// When the trial started.
        public let start: Date
        /// When the trial ends: its start plus its length.
        public let expiresAt: Date
        /// Seconds left.
        public let timeLeft: TimeInterval
        /// Whole days left (13 when 13.9 days remain).
        public let daysLeft: Int
    }
}

extension TrialGuard {
    /// A guard on the desktop keyring — where the trial record outlives a reinstall — with this
    /// device's app-specific identity (`DeviceIdentity.derived(appID:)`).
    ///
    /// ```swift
    /// let trial = try TrialGuard.keyring(service: "com.example.notes", appID: "com.example.notes",
    ///                                    length: .days(14))
    /// ```
    ///
    /// - Parameters:
    ///   - service: The keyring items' `service` attribute.
    ///   - appID: Keys the device identity; the machine id itself is never stored.
    ///   - length: The trial's length.
    ///   - rollbackTolerance: How far back the clock may go without being reported (default one hour).
    ///   - timeout: The deadline of each keyring call.
    ///   - sandbox: The sandbox the app runs in (detected when not given): a keyring that cannot
    ///     be reached there makes ``status()`` unknown with what the app must request.
    /// - Throws: `.invalidArgument` for an empty service name, `.unavailable` when the machine
    ///   id cannot be read. A locked or missing keyring is not thrown here: ``status()`` reports it
    ///   as ``TrialStatus/unknown(_:)``.
    public static func keyring(
        service: String,
        appID: String,
        length: TrialLength,
        rollbackTolerance: TimeInterval = 3600,
        timeout: Duration = KeyringStore.defaultTimeout,
        sandbox: Sandbox = .current
    ) throws(KeepsakeError) -> TrialGuard {
        TrialGuard(
            store: try KeyringStore(service: service, timeout: timeout, sandbox: sandbox), length: length,
            rollbackTolerance: rollbackTolerance, deviceIdentity: try DeviceIdentity.derived(appID: appID))
    }
}

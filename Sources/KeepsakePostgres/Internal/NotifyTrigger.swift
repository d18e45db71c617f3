#if PostgreSQL
import Foundation
import Keepsake
import Logging
internal import PostgresNIO

/// The table's change notifications (docs/FORMAT.md §11.1): a row trigger that sends
/// `pg_notify(channel, key)` for every row written or removed, and a statement trigger that
/// sends an empty payload ("any record") on `TRUNCATE`.
///
/// Why a trigger rather than a `pg_notify` in Keepsake's own write statements: a trigger fires
/// for every write to the table — `migrate` and every app instance, but also `psql`, a restore
/// script or another tool — so a watch never misses a writer that does not know about it. It
/// fires inside the writing transaction, and PostgreSQL delivers notifications only when that
/// transaction commits: a rolled-back batch, an insert that found the key taken
/// (`ON CONFLICT DO NOTHING`) or an update at a stale row version notifies nothing. Keepsake's
/// statements stay as they were. The price is that the trigger must exist: it is created with
/// the table, and a watch installs it on a table that lacks it (one created by psql or by an
/// older Keepsake); a role that may not create it leaves the watch polling.
struct NotifyTrigger: Sendable {
    /// The table as configured: `name` or `schema.name`.
    let table: String
    /// The table quoted for SQL.
    let quotedTable: String

    init(configuration: PostgresConfiguration) {
        table = configuration.table
        quotedTable = configuration.quotedTable
    }

    /// The notification channel: `keepsake:` and the table name as configured when that fits
    /// PostgreSQL's 63-byte identifiers, else `keepsake:` and the 16 hex digits of the table
    /// name's FNV-1a 64-bit hash.
    var channel: String { Self.channel(table: table) }

    static func channel(table: String) -> String {
        let plain = "keepsake:" + table
        return plain.utf8.count <= 63 ? plain : "keepsake:" + hex(fnv1a(table))
    }

    /// The row trigger's name: `keepsake_notify_` and the channel's hash (one per channel, so
    /// two spellings of one table — `records` and `public.records` — each keep their own).
    var rowTrigger: String { "keepsake_notify_" + Self.hex(Self.fnv1a(channel)) }
    /// The `TRUNCATE` trigger's name.
    var truncateTrigger: String { "keepsake_truncate_" + Self.hex(Self.fnv1a(channel)) }

    /// The trigger function, in the table's schema when it names one.
    var function: String {
        let parts = table.split(separator: ".")
        return parts.count == 2 ? "\"\(parts[0])\".keepsake_notify" : "keepsake_notify"
    }

    /// FNV-1a, 64-bit, of `text`'s UTF-8 bytes.
    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// One `DO` block that creates the function (when absent) and both triggers (when absent),
    /// under a transaction-scoped advisory lock so that two installers never race. Run on its
    /// own it is its own transaction; inside `BEGIN … COMMIT`, part of that one.
    ///
    /// Every name in it is checked (the table name) or derived from checked names, so nothing
    /// in it needs quoting beyond what is done here.
    var installSQL: String {
        """
        DO $keepsake$
        BEGIN
            PERFORM pg_advisory_xact_lock(hashtext('keepsake.notify'));
            IF to_regprocedure('\(function)()') IS NULL THEN
                CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS $body$
                BEGIN
                    -- A hint for watches (docs/FORMAT.md 11.1): the key written, or '' for any.
                    IF TG_LEVEL = 'STATEMENT' THEN
                        PERFORM pg_notify(TG_ARGV[0], '');
                        RETURN NULL;
                    END IF;
                    IF TG_OP IN ('UPDATE', 'DELETE') THEN
                        PERFORM pg_notify(TG_ARGV[0], CASE WHEN octet_length(OLD.key) < 8000 THEN OLD.key ELSE '' END);
                    END IF;
                    IF TG_OP IN ('INSERT', 'UPDATE') THEN
                        PERFORM pg_notify(TG_ARGV[0], CASE WHEN octet_length(NEW.key) < 8000 THEN NEW.key ELSE '' END);
                    END IF;
                    RETURN NULL;
                END
                $body$;
            END IF;
            IF NOT EXISTS (
                SELECT 1 FROM pg_trigger WHERE tgrelid = '\(quotedTable)'::regclass AND tgname = '\(rowTrigger)'
            ) THEN
                CREATE TRIGGER \(rowTrigger) AFTER INSERT OR UPDATE OR DELETE ON \(quotedTable)
                    FOR EACH ROW EXECUTE FUNCTION \(function)('\(channel)');
            END IF;
            IF NOT EXISTS (
                SELECT 1 FROM pg_trigger WHERE tgrelid = '\(quotedTable)'::regclass AND tgname = '\(truncateTrigger)'
            ) THEN
                CREATE TRIGGER \(truncateTrigger) AFTER TRUNCATE ON \(quotedTable)
                    FOR EACH STATEMENT EXECUTE FUNCTION \(function)('\(channel)');
            END IF;
        END
        $keepsake$
        """
    }

    /// What a watch found of the table's triggers.
    enum State: Sendable, Equatable {
        /// Both triggers are there: every committed write notifies.
        case armed
        /// The table does not exist yet (the first Keepsake write creates it with its triggers).
        case tableMissing
        /// The triggers are missing and this role may not create them (or the server cannot):
        /// the watch polls.
        case cannotInstall
    }

    /// Checks that the table has its triggers and creates them when it does not.
    ///
    /// - Throws: What the connection throws, except a refusal to create them, which is
    ///   ``State/cannotInstall``.
    func ensure(on connection: PostgresConnection, logger: Logger) async throws -> State {
        let rows = try await connection.collect(
            """
            SELECT to_regclass(\(table)) IS NOT NULL,
                (SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass(\(table))
                    AND tgname IN (\(rowTrigger), \(truncateTrigger)))
            """, logger: logger)
        guard let row = rows.first else { return .tableMissing }
        let (exists, triggers) = try row.decode((Bool, Int64).self)
        guard exists else { return .tableMissing }
        if triggers == 2 { return .armed }
        do {
            _ = try await connection.collect(PostgresQuery(unsafeSQL: installSQL), logger: logger)
            return .armed
        } catch  where Self.isRefusal(error) {
            logger.warning(
                "cannot create the change notification triggers; watches of this table poll",
                metadata: ["table": "\(table)", "error": "\(PostgresStore.sqlState(error) ?? "?")"])
            return .cannotInstall
        } catch  where PostgresStore.isMissingTable(error) {
            return .tableMissing  // dropped between the check and the install
        }
    }

    /// Whether `error` says the triggers cannot be created here: no privilege, or a server
    /// that lacks triggers, PL/pgSQL or `DO` (a PostgreSQL-compatible database).
    static func isRefusal(_ error: any Error) -> Bool {
        guard let state = PostgresStore.sqlState(error) else { return false }
        return state == "42501" || state.hasPrefix("0A") || state == "42601" || state == "42704"
            || state == "42883"
    }
}
#endif

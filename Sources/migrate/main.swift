import Keepsake
import KeepsakeCLI
import KeepsakePostgres
import Migrations

// The stock `migrate`: the KeepsakeCLI commands on the sample chains (Person, TrialInfo), with the
// package's own version for `--version`, and PostgreSQL stores (`postgresql://…`) beside the
// standard ones.
MigrateCommand.main(chains: SampleModels.all, version: KeepsakePackage.version, backends: PostgresBackend.all)

import Keepsake
import KeepsakeCLI
import KeepsakeOpenBao
import KeepsakePostgres
import Migrations

// The stock `migrate`: the KeepsakeCLI commands on the sample chains (Person, TrialInfo), with the
// package's own version for `--version`, and PostgreSQL (`postgresql://…`) and OpenBao
// (`openbao://…`, `vault://…`) stores beside the standard ones.
MigrateCommand.main(
    chains: SampleModels.all, version: KeepsakePackage.version,
    backends: PostgresBackend.all as [any StoreBackend] + OpenBaoBackend.all)

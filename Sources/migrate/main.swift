import Keepsake
import KeepsakeCLI
import Migrations

// The stock `migrate`: the KeepsakeCLI commands on the sample chains (Person, TrialInfo), with the
// package's own version for `--version`.
MigrateCommand.main(chains: SampleModels.all, version: KeepsakePackage.version)

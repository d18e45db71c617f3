import KeepsakeCLI
import Migrations

// The stock `migrate`: the KeepsakeCLI commands on the sample chains (Person, TrialInfo).
MigrateCommand.main(chains: SampleModels.all, version: "0.1.0")

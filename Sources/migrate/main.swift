#if CLI
import Keepsake
import KeepsakeCLI
import Migrations
#if OpenBao
import KeepsakeOpenBao
#endif
#if PostgreSQL
import KeepsakePostgres
#endif

// The stock `migrate`: the KeepsakeCLI commands on the sample chains (Person, TrialInfo), with the
// package's own version for `--version`, and — with their traits on, as by default — PostgreSQL
// (`postgresql://…`) and OpenBao (`openbao://…`, `vault://…`) stores beside the standard ones.
var backends: [any StoreBackend] = []
#if PostgreSQL
backends += PostgresBackend.all as [any StoreBackend]
#endif
#if OpenBao
backends += OpenBaoBackend.all as [any StoreBackend]
#endif
MigrateCommand.main(chains: SampleModels.all, version: KeepsakePackage.version, backends: backends)
#else
import Foundation

FileHandle.standardError.write(Data("migrate: this build has the package trait CLI off\n".utf8))
exit(70)
#endif

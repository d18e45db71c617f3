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
// (`postgresql://…`) and OpenBao (`openbao://…`, `vault://…`) stores beside the standard ones, and
// master keys held by OpenBao Transit (`--master-key transit:openbao://…?wrapped_key_file=PATH`).
var backends: [any StoreBackend] = []
var keySources: [KeySourceKind] = []
#if PostgreSQL
backends += PostgresBackend.all as [any StoreBackend]
#endif
#if OpenBao
backends += OpenBaoBackend.all as [any StoreBackend]
keySources.append(
    KeySourceKind(scheme: "transit", valueName: "URI", summary: "a data key wrapped by an OpenBao Transit key") {
        value throws(KeepsakeError) in try OpenBaoTransitKey(parsing: value)
    })
#endif
MigrateCommand.main(
    chains: SampleModels.all, version: KeepsakePackage.version, backends: backends, keySources: keySources)
#else
import Foundation

FileHandle.standardError.write(Data("migrate: this build has the package trait CLI off\n".utf8))
exit(70)
#endif

// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import KeepsakeCLI
import SettingsFolderStore
import SettingsModels

// `settings-migrate`: Keepsake's `migrate` command on this app's Settings chain, for operators
// (status, plan, run, show, get, put, …), on the standard stores and the app's own `folder:DIR`.
// Run `settings-migrate --help`.
MigrateCommand.main(chains: [Settings.chain.erased], commandName: "settings-migrate", version: "1.0.0",
                    appID: "com.example.settings", backends: [FolderBackend()])

import Keepsake
import Migrations

/// The next release's Person: V3 plus an optional phone number. It only adds a key, so it
/// declares V3 readers compatible: a V3 release reads these records and keeps the phone.
struct PersonV4: ModelVersion, Equatable {
    typealias Predecessor = PersonV3
    static let version = 4
    static let oldestReader = 3

    let alias: String
    let email: String
    let phone: String?

    init(alias: String, email: String, phone: String?) {
        self.alias = alias
        self.email = email
        self.phone = phone
    }

    init(migrating previous: PersonV3, context: MigrationContext) {
        self.init(alias: previous.alias, email: previous.email, phone: nil)
    }
}

enum PersonRelease4 {
    static let chain = ModelChain<PersonV4>(name: "Person", defaultKeys: ["person"])
}

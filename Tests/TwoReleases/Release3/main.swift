import Migrations
import TwoReleasesSupport

// The release whose Person chain ends at V3 (the sample chain as shipped).
ReleaseApp(
    chain: Person.chain,
    make: { $0.count == 2 ? PersonV3(alias: $0[0], email: $0[1]) : nil },
    renamed: { PersonV3(alias: $1, email: $0.email) },
    fields: { ["alias": $0.alias, "email": $0.email] }
).main()

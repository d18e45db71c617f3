import TwoReleasesSupport

// The release whose Person chain ends at V4, which adds `phone` and declares V3 readers compatible.
ReleaseApp(
    chain: PersonRelease4.chain,
    make: {
        (2...3).contains($0.count) ? PersonV4(alias: $0[0], email: $0[1], phone: $0.count == 3 ? $0[2] : nil) : nil
    },
    renamed: { PersonV4(alias: $1, email: $0.email, phone: $0.phone) },
    fields: { ["alias": $0.alias, "email": $0.email, "phone": $0.phone ?? "-"] }
).main()

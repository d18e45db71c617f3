import Foundation
import Keepsake
import KeepsakeMemory
import Testing

@Suite("Messages name things with the right article")
struct MessageGrammarTests {
    struct AccountV0: ModelVersion, Equatable {
        static let version = 0
        var owner: String
    }

    struct LinkV0: ModelVersion, Equatable {
        static let version = 0
        var url: URL
    }

    @Test("an Account record, a Person record, an account-migrate command")
    func articles() throws {
        #expect(withArticle("Account") == "an Account")
        #expect(withArticle("Person") == "a Person")
        #expect(withArticle("account-migrate") == "an account-migrate")
        #expect(withArticle("") == "")

        let chain = ModelChain<AccountV0>(name: "Account", defaultKeys: ["account"])
        let store = InMemoryStore(contents: ["account": Data("[1]".utf8)])
        let error = try #require(throws: KeepsakeError.self) { _ = try Vault(store: store).load(chain) }
        #expect(error.message.contains("for an Account record"), "\(error.message)")
    }

    @Test("a URL field holding an empty string says so, not that a string is not a URL")
    func emptyURL() throws {
        let chain = ModelChain<LinkV0>(name: "Link", defaultKeys: ["link"])
        let store = InMemoryStore(contents: ["link": Data(#"{"version":0,"url":""}"#.utf8)])
        let error = try #require(throws: KeepsakeError.self) { _ = try Vault(store: store).load(chain) }
        #expect(error.code == .corruptRecord)
        #expect("\(error)".contains("an empty string is not a valid URL"), "\(error)")
        #expect(try store.data(forKey: "link") == Data(#"{"version":0,"url":""}"#.utf8))
    }
}

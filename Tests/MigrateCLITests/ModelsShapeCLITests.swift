import Foundation
import Keepsake
import Migrations
import Testing

/// `migrate models --json`, as far as this test reads it.
private struct ModelsOutput: Decodable {
    struct Version: Decodable {
        let version: Int
        let type: String
        let shape: RecordShape?
    }
    let name: String
    let versions: [Version]
}

@Suite("migrate models --json: each version's shape")
struct ModelsShapeCLITests {
    @Test("Person V3's shape is exactly two required strings, alias and email")
    func personV3Shape() throws {
        let result = try migrate(["models", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try decodeJSON(result.stdout) as? [[String: Any]])
        let person = try #require(json.first { $0["name"] as? String == "Person" })
        let versions = try #require(person["versions"] as? [[String: Any]])
        let v3 = try #require(versions.first { $0["version"] as? Int == 3 })
        #expect(v3["type"] as? String == "PersonV3")
        let shape = try #require(v3["shape"] as? [String: [String: Any]])
        #expect(shape.keys.sorted() == ["alias", "email"])
        for key in ["alias", "email"] {
            #expect(shape[key]?.count == 2)
            #expect(shape[key]?["required"] as? Bool == true)
            #expect(shape[key]?["type"] as? String == "string")
        }
        // And as printed: pretty, sorted keys.
        #expect(
            result.stdout.contains(
                """
                        "shape" : {
                          "alias" : {
                            "required" : true,
                            "type" : "string"
                          },
                          "email" : {
                            "required" : true,
                            "type" : "string"
                          }
                        },
                        "type" : "PersonV3",
                """))
    }

    @Test("every version's printed shape is the chain's, TrialInfo's dates as dates")
    func everyShape() throws {
        let output = try JSONDecoder().decode(
            [ModelsOutput].self, from: Data(try migrate(["models", "--json"]).stdout.utf8))
        #expect(output.map(\.name) == ["Person", "TrialInfo"])
        for (model, chain) in zip(output, SampleModels.all) {
            let shapes = chain.shapes
            #expect(model.versions.map(\.version) == Array(0...chain.latestVersion))
            for version in model.versions {
                #expect(version.shape == shapes[version.version], "\(model.name) v\(version.version)")
            }
        }
        #expect(
            output[1].versions[0].shape
                == RecordShape(fields: [
                    "version": .required(.integer), "startDate": .required(.date)
                ]))
    }
}

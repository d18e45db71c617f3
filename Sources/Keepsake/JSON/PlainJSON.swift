import Foundation

/// JSON for plain values, as stores beside the engine keep them (the defaults store's
/// `value(_:forKey:)`): Keepsake's one parser and decoder, for modules of this package.
package enum PlainJSON {
    /// `bytes` parsed and decoded as `T`, with Keepsake's default date and data forms.
    ///
    /// - Throws: `JSONSyntaxError` when `bytes` are not JSON; `DecodingError` when they are not a `T`.
    package static func decode<T: Decodable>(_ type: T.Type, from bytes: Data) throws -> T {
        try JSONValueDecoder.decode(type, from: JSONParser.parse(bytes))
    }
}

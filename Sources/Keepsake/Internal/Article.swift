/// `word` with its indefinite article, for messages that name a model, a type or a command:
/// "an Account record", "a Person record", "an account-migrate command". Chosen by the first
/// letter (a vowel takes "an"), which is right for the names messages hold.
package func withArticle(_ word: String) -> String {
    guard let first = word.unicodeScalars.first else { return word }
    return ("aeiouAEIOU".unicodeScalars.contains(first) ? "an " : "a ") + word
}

/// A value that holds credentials, or a request that may carry them, and shows only its redacted
/// `description` wherever it is shown: `print`, string interpolation and `debugPrint` show the
/// description, and `dump` and debuggers, which read the reflection, show the same text as its
/// one child. What is safe to print is decided in one place, the description.
protocol RedactedReflection: CustomStringConvertible, CustomReflectable {}

extension RedactedReflection {
    /// One child, `redacted`: the description, which shows no secret.
    public var customMirror: Mirror {
        Mirror(self, children: ["redacted": description])
    }
}

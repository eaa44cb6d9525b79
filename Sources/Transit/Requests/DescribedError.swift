import Foundation

/// An error whose one sentence of text, its `description`, is also what Foundation shows of it
/// (`localizedDescription`, `errorDescription`): the errors Transit throws say what went wrong
/// and what to do in the same words wherever they are printed.
package protocol DescribedError: LocalizedError, CustomStringConvertible {}

extension DescribedError {
    /// The same as `description`.
    public var errorDescription: String? { description }
}

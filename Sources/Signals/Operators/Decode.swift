import Foundation

/// A decoder that turns an encoded input into a `Decodable` value, like `JSONDecoder`.
///
/// Signals' equivalent of Combine's `TopLevelDecoder`, which does not exist on Linux.
public protocol SignalDecoder: Sendable {
    /// The encoded form the decoder reads, such as `Data`.
    associatedtype Input
    /// Decodes a value of `type` from `input`.
    func decode<T: Decodable>(_ type: T.Type, from input: Input) throws -> T
}

extension JSONDecoder: SignalDecoder {}
extension PropertyListDecoder: SignalDecoder {}

extension Signal {
    /// Decodes every value with `decoder`. A decoding error cancels the upstream and fails the
    /// signal with the `DecodingError`.
    @inlinable
    public func decode<T: Decodable & Sendable, D: SignalDecoder>(
        _ type: T.Type,
        decoder: D
    ) -> Signal<T, any Error> where D.Input == Output {
        tryMap { try decoder.decode(type, from: $0) }
    }
}

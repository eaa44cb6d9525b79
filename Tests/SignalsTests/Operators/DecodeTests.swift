import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct DecodeTests {
    @Test func decodeDecodesAndFailsWithTheDecodingError() {
        struct Item: Decodable, Equatable { var id: Int }
        let decoded = SignalRecorder<Item, any Error>()
        decoded.subscribe(to: Signal<Data, Never>(value: Data(#"{"id": 4}"#.utf8)).decode(Item.self, decoder: JSONDecoder()))
        #expect(decoded.values == [Item(id: 4)])
        #expect(decoded.events.filter(\.isTerminal).count == 1)

        let probe = ContractProbe<Data, Never>()
        let failed = SignalRecorder<Item, any Error>()
        let token = failed.subscribe(to: probe.signal.decode(Item.self, decoder: JSONDecoder()))
        probe.send(.value(Data("{".utf8)))
        #expect(failed.failure is DecodingError)
        #expect(probe.teardowns == 1)
        probe.send(.value(Data(#"{"id": 1}"#.utf8)))
        #expect(failed.events.count == 1)
        withExtendedLifetime(token) {}
    }
}

/// Registrations kept in the order they were made, removable by key in amortised constant time:
/// the cancellables of a ``CancellationToken`` beyond its inline slots, and the subscribers of a
/// subject.
///
/// A removal leaves a hole (so the order of the others is kept without moving them) and forgets
/// the key; holes are squeezed out once they outnumber the registrations. Keys are found by a
/// short scan while the list is small and through a dictionary once it is not, so removing
/// 100 000 registrations in any order costs time linear in 100 000, and a list of two or three
/// allocates no dictionary.
///
/// A key registered twice is removed one registration at a time, oldest first.
///
/// Not thread-safe: the owner keeps it under its lock, and releases what ``remove(key:)`` and
/// ``removeAll()`` return after the lock.
@usableFromInline
struct RegistrationList<Key: Hashable, Element> {
    @usableFromInline
    struct Slot {
        @usableFromInline let key: Key
        @usableFromInline let element: Element

        @inlinable
        init(key: Key, element: Element) {
            self.key = key
            self.element = element
        }
    }

    /// Lists up to this long are searched by a scan; longer ones keep `positions`.
    @usableFromInline
    static var scanLimit: Int { 8 }

    @usableFromInline
    private(set) var slots: ContiguousArray<Slot?> = []
    /// The slot of every key, once the list outgrew ``scanLimit``; `nil` until then.
    @usableFromInline
    var positions: [Key: Int]?
    /// Keys registered more than once: a removal then looks for the next registration of the key.
    @usableFromInline
    var hasDuplicates = false
    /// The number of registrations (slots that are not holes).
    @usableFromInline
    private(set) var count = 0

    @inlinable
    init() {}

    /// `true` when the list holds no registration.
    @inlinable
    var isEmpty: Bool { count == 0 }

    /// Adds `element` under `key`, after every registration already in the list.
    @inlinable
    mutating func append(_ element: Element, key: Key) {
        if positions == nil, slots.count >= Self.scanLimit { buildPositions() }
        if positions != nil {
            if positions![key] == nil {
                positions![key] = slots.count
            } else {
                hasDuplicates = true
            }
        } else if !hasDuplicates, slots.contains(where: { $0?.key == key }) {
            hasDuplicates = true
        }
        slots.append(Slot(key: key, element: element))
        count += 1
    }

    /// Removes the oldest registration under `key` and returns its element (to be released by
    /// the caller, after its lock), or `nil` if there is none.
    @inlinable
    mutating func remove(key: Key) -> Element? {
        let found: Int?
        if let positions {
            found = positions[key]
        } else {
            found = slots.firstIndex { $0?.key == key }
        }
        guard let index = found, let slot = slots[index] else { return nil }
        slots[index] = nil
        count -= 1
        if positions != nil {
            positions![key] = hasDuplicates ? slots[(index + 1)...].firstIndex { $0?.key == key } : nil
        }
        compactIfSparse()
        return slot.element
    }

    /// Empties the list and returns what it held, in registration order, for the caller to use
    /// and release after its lock.
    @inlinable
    mutating func removeAll() -> RegistrationList {
        defer { self = RegistrationList() }
        return self
    }

    /// Calls `body` with every element, in registration order.
    @inlinable
    func forEach(_ body: (Element) throws -> Void) rethrows {
        for slot in slots {
            if let slot { try body(slot.element) }
        }
    }

    /// Drops trailing holes at once, and squeezes the others out once they outnumber the
    /// registrations (each registration then moves at most once per halving: amortised O(1)).
    @inlinable
    mutating func compactIfSparse() {
        while let last = slots.last, last == nil { slots.removeLast() }
        if slots.isEmpty {
            if positions != nil { positions = nil }
            hasDuplicates = false
            return
        }
        guard slots.count > 2 * Self.scanLimit, count * 2 < slots.count else { return }
        var compacted = ContiguousArray<Slot?>()
        compacted.reserveCapacity(count * 2)
        for slot in slots where slot != nil { compacted.append(slot) }
        slots = compacted
        positions = nil
        if slots.count > Self.scanLimit { buildPositions() }
    }

    /// Indexes every key by its oldest slot.
    @inlinable
    mutating func buildPositions() {
        var built: [Key: Int] = [:]
        built.reserveCapacity(slots.count * 2)
        for (index, slot) in slots.enumerated() {
            guard let slot else { continue }
            if built[slot.key] == nil { built[slot.key] = index }
        }
        positions = built
    }
}

extension RegistrationList: Sendable where Key: Sendable, Element: Sendable {}
extension RegistrationList.Slot: Sendable where Key: Sendable, Element: Sendable {}

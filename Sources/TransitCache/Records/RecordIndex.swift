/// The name of a record's file: the SHA-256 digest of its key.
struct RecordID: Hashable, Sendable {
    let words: (UInt64, UInt64, UInt64, UInt64)

    /// The ID of `key`.
    init(key: String) {
        self.init(digest: SHA256.digest(key.utf8))
    }

    init(digest: [UInt8]) {
        func word(_ index: Int) -> UInt64 {
            var value: UInt64 = 0
            for byte in digest[(index * 8)..<(index * 8 + 8)] { value = value << 8 | UInt64(byte) }
            return value
        }
        words = (word(0), word(1), word(2), word(3))
    }

    /// Parses a file name written by ``fileName``; `nil` for any other name.
    init?(fileName: String) {
        let utf8 = Array(fileName.utf8)
        guard utf8.count == 64 + RecordID.suffix.utf8.count, fileName.hasSuffix(RecordID.suffix) else { return nil }
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = RecordID.hexValue(utf8[index]), let low = RecordID.hexValue(utf8[index + 1]) else { return nil }
            digest.append(high << 4 | low)
        }
        self.init(digest: digest)
    }

    static let suffix = ".record"

    /// 64 lowercase hexadecimal digits and ``suffix``: only `[0-9a-f.a-z]`, never a separator.
    var fileName: String {
        var text = ""
        text.reserveCapacity(64 + RecordID.suffix.utf8.count)
        for word in [words.0, words.1, words.2, words.3] {
            let hex = String(word, radix: 16)
            text += String(repeating: "0", count: 16 - hex.utf8.count) + hex
        }
        return text + RecordID.suffix
    }

    static func == (lhs: RecordID, rhs: RecordID) -> Bool {
        lhs.words == rhs.words
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

/// What a cache instance knows about the records in its folder, ordered from least to most
/// recently used: a hash map into an intrusive doubly linked list kept in an array, so a use,
/// an insertion and a removal are O(1) and eviction starts at the least recently used record.
///
/// The folder is the truth; the index is this instance's view of it. Another instance on the same
/// folder may add, use or remove records: eviction re-reads a candidate's file before removing it,
/// and garbage collection rebuilds the index from a scan.
struct RecordIndex {
    struct Entry: Sendable {
        var id: RecordID
        var key: String
        /// Bytes on disk (header and payload).
        var size: Int
        /// Milliseconds since 1970.
        var lastUse: Int64
        /// Milliseconds since 1970; `nil` if the record never expires.
        var expiresAt: Int64?
        var pinCount: UInt32

        fileprivate var previous = -1
        fileprivate var next = -1

        init(id: RecordID, key: String, size: Int, lastUse: Int64, expiresAt: Int64?, pinCount: UInt32) {
            self.id = id
            self.key = key
            self.size = size
            self.lastUse = lastUse
            self.expiresAt = expiresAt
            self.pinCount = pinCount
        }
    }

    private var slots: [Entry] = []
    private var free: [Int] = []
    private var positions: [RecordID: Int] = [:]
    /// Least recently used.
    private var head = -1
    /// Most recently used.
    private var tail = -1

    /// Bytes of all indexed records.
    private(set) var totalSize = 0
    /// Indexed records that are pinned.
    private(set) var pinnedCount = 0

    var count: Int { positions.count }

    subscript(id: RecordID) -> Entry? {
        positions[id].map { slots[$0] }
    }

    /// Inserts or replaces the entry for `entry.id`, as the most recently used.
    mutating func upsert(_ entry: Entry) {
        if let position = positions[entry.id] {
            account(slots[position], sign: -1)
            unlink(position)
            slots[position] = entry
            appendAsMostRecent(position)
        } else {
            let position: Int
            if let reused = free.popLast() {
                slots[reused] = entry
                position = reused
            } else {
                slots.append(entry)
                position = slots.count - 1
            }
            positions[entry.id] = position
            appendAsMostRecent(position)
        }
        account(entry, sign: 1)
    }

    /// Records a use: the entry becomes the most recently used.
    mutating func touch(_ id: RecordID, lastUse: Int64) {
        guard let position = positions[id] else { return }
        slots[position].lastUse = max(slots[position].lastUse, lastUse)
        unlink(position)
        appendAsMostRecent(position)
    }

    /// Updates the pin count of an entry, leaving its place in the order.
    mutating func setPinCount(_ id: RecordID, _ pinCount: UInt32) {
        guard let position = positions[id] else { return }
        account(slots[position], sign: -1)
        slots[position].pinCount = pinCount
        account(slots[position], sign: 1)
    }

    /// Removes the entry for `id` and returns it.
    @discardableResult
    mutating func remove(_ id: RecordID) -> Entry? {
        guard let position = positions.removeValue(forKey: id) else { return nil }
        let entry = slots[position]
        account(entry, sign: -1)
        unlink(position)
        free.append(position)
        return entry
    }

    /// The least recently used entry that is not pinned and not in `excluded`.
    func leastRecentlyUsedUnpinned(excluding excluded: Set<RecordID> = []) -> Entry? {
        var position = head
        while position >= 0 {
            let entry = slots[position]
            if entry.pinCount == 0, !excluded.contains(entry.id) { return entry }
            position = entry.next
        }
        return nil
    }

    /// Every entry, from least to most recently used.
    /// The keys that `isIncluded` accepts, in no particular order.
    func keys(where isIncluded: (String) -> Bool) -> [String] {
        positions.values.compactMap { position in isIncluded(slots[position].key) ? slots[position].key : nil }
    }

    var entriesByUse: [Entry] {
        var result: [Entry] = []
        result.reserveCapacity(count)
        var position = head
        while position >= 0 {
            result.append(slots[position])
            position = slots[position].next
        }
        return result
    }

    private mutating func account(_ entry: Entry, sign: Int) {
        totalSize += sign * entry.size
        if entry.pinCount > 0 { pinnedCount += sign }
    }

    private mutating func unlink(_ position: Int) {
        let (previous, next) = (slots[position].previous, slots[position].next)
        if previous >= 0 { slots[previous].next = next } else if head == position { head = next }
        if next >= 0 { slots[next].previous = previous } else if tail == position { tail = previous }
        slots[position].previous = -1
        slots[position].next = -1
    }

    private mutating func appendAsMostRecent(_ position: Int) {
        slots[position].previous = tail
        slots[position].next = -1
        if tail >= 0 { slots[tail].next = position } else { head = position }
        tail = position
    }
}

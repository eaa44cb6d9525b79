/// Values a subscription carries from the subscriber to the producers it reaches, whatever
/// thread each of them is subscribed on.
///
/// A context travels with the ``CancellationToken`` a subscription is made in: every operator of
/// Signals subscribes its upstream in the token it was given, in a child of it, or in a token
/// made with its context, so a value put in the context where a chain is subscribed is read
/// where its source is subscribed, however many operators, schedulers and retries lie between.
/// It is how an operator tells the sources below it something about this subscription (that it
/// will subscribe again, which request it belongs to) without a thread-local or a global.
///
/// ```swift
/// enum TraceID: SubscriptionContextKey { typealias Value = String }
///
/// let source = Signal<String, Never>(subscribing: { observer, context in
///     observer.send(context[TraceID.self] ?? "none")
///     observer.finish()
///     return nil
/// })
/// source.map { $0 }.observe(observer, in: CancellationToken(context: SubscriptionContext().adding(TraceID.self, "abc")))
/// ```
///
/// A context is immutable: ``adding(_:_:)`` returns a new one. A signal shared by several
/// subscribers (``Signal/share()``) subscribes its source once, in an empty context.
public struct SubscriptionContext: Sendable {
    /// A key, and the values added before it.
    @usableFromInline
    class Node: @unchecked Sendable {
        @usableFromInline let key: ObjectIdentifier
        @usableFromInline let next: Node?

        @usableFromInline
        init(key: ObjectIdentifier, next: Node?) {
            self.key = key
            self.next = next
        }
    }

    /// The node of a value: always the node of a key whose `Value` is `Value` (see
    /// ``adding(_:_:)``), so reading it needs no cast of the value.
    @usableFromInline
    final class ValueNode<Value: Sendable>: Node, @unchecked Sendable {
        @usableFromInline let value: Value

        @usableFromInline
        init(key: ObjectIdentifier, value: Value, next: Node?) {
            self.value = value
            super.init(key: key, next: next)
        }
    }

    @usableFromInline
    let head: Node?

    /// The empty context.
    @inlinable
    public init() {
        head = nil
    }

    @usableFromInline
    init(head: Node?) {
        self.head = head
    }

    /// `true` when no value was added.
    @inlinable
    public var isEmpty: Bool { head == nil }

    /// The value most recently added for `key`, if any.
    @inlinable
    public subscript<Key: SubscriptionContextKey>(_ key: Key.Type) -> Key.Value? {
        (node(for: key) as? ValueNode<Key.Value>)?.value
    }

    /// `true` when a value was added for `key`.
    @inlinable
    public func contains<Key: SubscriptionContextKey>(_ key: Key.Type) -> Bool {
        node(for: key) != nil
    }

    /// The node most recently added for `key`, if any.
    @inlinable
    func node<Key: SubscriptionContextKey>(for key: Key.Type) -> Node? {
        let id = ObjectIdentifier(key)
        var node = head
        while let current = node {
            if current.key == id { return current }
            node = current.next
        }
        return nil
    }

    /// This context with `value` for `key` (hiding any value `key` had).
    @inlinable
    public func adding<Key: SubscriptionContextKey>(_ key: Key.Type, _ value: Key.Value) -> SubscriptionContext {
        SubscriptionContext(head: ValueNode(key: ObjectIdentifier(key), value: value, next: head))
    }
}

/// The key of a value in a ``SubscriptionContext``: a type of its own, so that two libraries never
/// read each other's values.
public protocol SubscriptionContextKey {
    /// The type of the value the key names.
    associatedtype Value: Sendable
}

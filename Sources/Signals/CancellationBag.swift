import Synchronization

/// Holds cancellables and cancels them all when it is emptied or released.
///
/// Give a view model (or any owner) a bag and store every request it starts in it: when the owner
/// goes away, the bag goes with it and every request the owner started is cancelled.
///
/// ```swift
/// final class PostsViewModel {
///     private let bag = CancellationBag()
///     func load() {
///         service.posts.sink { [weak self] in self?.show($0) }.store(in: bag)
///     }
/// }
/// ```
///
/// Thread safety: every method may be called from any thread. Cancellation runs outside the
/// bag's lock. `items` is only touched with `lock` held, which is why the class may be
/// `@unchecked Sendable`.
public final class CancellationBag: @unchecked Sendable {
    private let lock = Lock()
    @exclusivity(unchecked) private var items: [any Cancellable]? = []

    /// Creates an empty bag.
    public init() {}

    deinit {
        cancelAll()
    }

    /// Adds `cancellable` to the bag. If the bag was already released (only possible while its
    /// `deinit` runs), it is cancelled at once.
    package func insert(_ cancellable: any Cancellable) {
        let stored = lock.withLock { () -> Bool in
            guard items != nil else { return false }
            items!.append(cancellable)
            return true
        }
        if !stored { cancellable.cancel() }
    }

    /// The number of cancellables the bag holds.
    package var count: Int {
        lock.withLock { items?.count ?? 0 }
    }

    /// Cancels everything in the bag and empties it. The bag stays usable.
    public func cancelAll() {
        var taken: [any Cancellable] = []
        lock.withLock {
            if items != nil { swap(&taken, &items!) }
        }
        for cancellable in taken { cancellable.cancel() }
    }
}

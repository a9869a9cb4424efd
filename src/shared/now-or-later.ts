/**
 * A result the callee had in hand, or a promise of it when it had to wait (for the disk, another
 * connection, the network). The hottest reads answer at once most of the time; passing the value
 * straight on spares each step a promise and a turn of the microtask queue.
 */
export type NowOrLater<T> = T | Promise<T>;

/**
 * `next` applied to the value: at once when it is in hand, else when it arrives. A failure in hand
 * is thrown at once; callers that await the result see both kinds the same way.
 */
export function andThen<T, U>(value: NowOrLater<T>, next: (value: T) => NowOrLater<U>): NowOrLater<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

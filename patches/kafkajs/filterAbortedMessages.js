// tao-patch: read_committed aborted-transaction filtering (replaces kafkajs 2.2.4's file; see patches/README.md)
const Long = require('../utils/long')
const ABORTED_MESSAGE_KEY = Buffer.from([0, 0, 0, 0])

const isAbortMarker = ({ key, isControlRecord }) => {
  // Handle null/undefined keys.
  if (!isControlRecord || !key) return false
  // Cast key to buffer defensively
  return Buffer.from(key).equals(ABORTED_MESSAGE_KEY)
}

/**
 * Remove messages marked as aborted according to the aborted transactions list, as the Java
 * consumer does.
 *
 * The broker lists aborted transactions in the order their abort markers were written, which is not
 * the order of their first offsets when transactions interleave on a partition. So: sort by first
 * offset, and before each message activate every aborted transaction that starts at or before it.
 * (kafkajs 2.2.4 assumed the list sorted and activated one entry per message, so a record of an
 * aborted transaction that began before an earlier-listed one was returned as committed.)
 *
 * Start of an aborted transaction is determined by message offset.
 * End of an aborted transaction is determined by its producer's abort marker.
 * @param {Message[]} messages
 * @param {Transaction[]} [abortedTransactions]
 * @returns {Message[]} Messages which did not participate in an aborted transaction
 *
 * @typedef {object} Message
 * @param {Buffer} key
 * @param {lastOffset} key  Int64
 * @param {RecordBatch}  batchContext
 *
 * @typedef {object} Transaction
 * @param {string} firstOffset  Int64
 * @param {string} producerId  Int64
 *
 * @typedef {object} RecordBatch
 * @param {string}  producerId  Int64
 * @param {boolean}  inTransaction
 */
module.exports = ({ messages, abortedTransactions }) => {
  if (!abortedTransactions || !abortedTransactions.length) {
    return messages
  }

  const pending = [...abortedTransactions].sort((a, b) =>
    Long.fromValue(a.firstOffset).compare(Long.fromValue(b.firstOffset))
  )
  const abortedProducers = new Set()

  return messages.filter(message => {
    // Every aborted transaction that has started by this offset is in effect for its producer.
    while (pending.length && Long.fromValue(message.offset).gte(Long.fromValue(pending[0].firstOffset))) {
      abortedProducers.add(String(pending.shift().producerId))
    }

    const { producerId, inTransaction } = message.batchContext

    if (isAbortMarker(message)) {
      // Transaction is over, we no longer need to ignore messages from this producer
      abortedProducers.delete(String(producerId))
    } else if (inTransaction && abortedProducers.has(String(producerId))) {
      return false
    }

    return true
  })
}

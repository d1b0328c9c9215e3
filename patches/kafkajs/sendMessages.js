// tao-patch: produce retries resend exactly the unacknowledged partitions (replaces kafkajs 2.2.4's file; see patches/README.md)
const { KafkaJSMetadataNotLoaded } = require('../errors')
const { staleMetadata } = require('../protocol/error')
const groupMessagesPerPartition = require('./groupMessagesPerPartition')
const createTopicData = require('./createTopicData')
const responseSerializer = require('./responseSerializer')

const { keys } = Object

/**
 * Sends `topicMessages` to the leaders of their partitions, retrying on retriable errors.
 *
 * kafkajs 2.2.4 kept the acknowledgements of one send per broker across its retries: after a
 * failure it skipped every broker that had answered before, whatever partitions it now leads. When
 * partition leadership moved between two attempts (a broker killed or restarted), that (a) never
 * sent the records of a partition that moved to a broker which had answered, and (b) sent again,
 * under new sequence numbers, the already written records of a partition that moved away from it,
 * so they were written twice (inside a transaction: committed twice). Here the acknowledgements are
 * kept per topic-partition: each attempt sends exactly the partitions not acknowledged yet, to
 * their current leaders, and a partition's records are assigned to it once per send (a retry
 * cannot move a keyless record to another partition). A failed request gives its sequence numbers
 * back, so a resend of a batch that did land is deduplicated by the broker (idempotence).
 *
 * @param {Object} options
 * @param {import("../../types").Logger} options.logger
 * @param {import("../../types").Cluster} options.cluster
 * @param {ReturnType<import("../../types").ICustomPartitioner>} options.partitioner
 * @param {import("./eosManager").EosManager} options.eosManager
 * @param {import("../retry").Retrier} options.retrier
 */
module.exports = ({ logger, cluster, partitioner, eosManager, retrier }) => {
  return async ({ acks, timeout, compression, topicMessages }) => {
    /** Per topic, the records of each partition (decided once per send). */
    const messagesPerTopic = new Map()
    /** Per "topic:partition", the partition's entry of the produce response once acknowledged. */
    const acknowledged = new Map()
    const partitionKey = (topic, partition) => `${topic}:${partition}`

    const createProducerRequests = async () => {
      await cluster.refreshMetadataIfNecessary()
      /** Per leader node id: the topics and their unacknowledged partitions it leads now. */
      const requestsPerNode = new Map()

      for (const { topic, messages } of topicMessages) {
        const partitionMetadata = cluster.findTopicPartitionMetadata(topic)

        if (partitionMetadata.length === 0) {
          logger.debug('Producing to topic without metadata', {
            topic,
            targetTopics: Array.from(cluster.targetTopics),
          })

          throw new KafkaJSMetadataNotLoaded('Producing to topic without metadata')
        }

        if (!messagesPerTopic.has(topic)) {
          messagesPerTopic.set(
            topic,
            groupMessagesPerPartition({ topic, partitionMetadata, messages, partitioner })
          )
        }
        const messagesPerPartition = messagesPerTopic.get(topic)
        const pending = keys(messagesPerPartition).filter(
          partition => !acknowledged.has(partitionKey(topic, partition))
        )
        const partitionsPerLeader = cluster.findLeaderForPartitions(topic, pending)

        for (const nodeId of keys(partitionsPerLeader)) {
          if (!requestsPerNode.has(nodeId)) requestsPerNode.set(nodeId, [])
          requestsPerNode.get(nodeId).push({
            topic,
            partitions: partitionsPerLeader[nodeId],
            messagesPerPartition,
          })
        }
      }

      return Array.from(requestsPerNode.entries()).map(async ([nodeId, topicDataForBroker]) => {
        const broker = await cluster.findBroker({ nodeId })
        const topicData = createTopicData(topicDataForBroker)

        await eosManager.acquireBrokerLock(broker)
        try {
          if (eosManager.isTransactional()) {
            await eosManager.addPartitionsToTransaction(topicData)
          }

          topicData.forEach(({ topic, partitions }) => {
            partitions.forEach(entry => {
              entry['firstSequence'] = eosManager.getSequence(topic, entry.partition)
              eosManager.updateSequence(topic, entry.partition, entry.messages.length)
            })
          })

          let response
          try {
            response = await broker.produce({
              transactionalId: eosManager.isTransactional()
                ? eosManager.getTransactionalId()
                : undefined,
              producerId: eosManager.getProducerId(),
              producerEpoch: eosManager.getProducerEpoch(),
              acks,
              timeout,
              compression,
              topicData,
            })
          } catch (e) {
            topicData.forEach(({ topic, partitions }) => {
              partitions.forEach(entry => {
                eosManager.updateSequence(topic, entry.partition, -entry.messages.length)
              })
            })
            throw e
          }

          const expectResponse = acks !== 0
          if (expectResponse) {
            for (const entry of responseSerializer(response)) {
              acknowledged.set(partitionKey(entry.topicName, entry.partition), entry)
            }
          } else {
            topicData.forEach(({ topic, partitions }) => {
              partitions.forEach(entry => acknowledged.set(partitionKey(topic, entry.partition), null))
            })
          }
        } finally {
          await eosManager.releaseBrokerLock(broker)
        }
      })
    }

    return retrier(async (bail, retryCount, retryTime) => {
      const topics = topicMessages.map(({ topic }) => topic)
      await cluster.addMultipleTargetTopics(topics)

      try {
        const requests = await createProducerRequests()
        // Every request settles before a retry, so no request of this attempt is still in flight
        // (holding sequence numbers) when the next attempt computes what is left to send.
        const results = await Promise.allSettled(requests)
        const failed = results.find(result => result.status === 'rejected')
        if (failed) throw failed.reason
        return Array.from(acknowledged.values()).filter(entry => entry !== null)
      } catch (e) {
        if (e.name === 'KafkaJSConnectionClosedError') {
          cluster.removeBroker({ host: e.host, port: e.port })
        }

        if (!cluster.isConnected()) {
          logger.debug(`Cluster has disconnected, reconnecting: ${e.message}`, {
            retryCount,
            retryTime,
          })
          await cluster.connect()
          await cluster.refreshMetadata()
          throw e
        }

        if (
          staleMetadata(e) ||
          e.name === 'KafkaJSMetadataNotLoaded' ||
          e.name === 'KafkaJSConnectionError' ||
          e.name === 'KafkaJSConnectionClosedError' ||
          (e.name === 'KafkaJSProtocolError' && e.retriable)
        ) {
          logger.error(`Failed to send messages: ${e.message}`, { retryCount, retryTime })
          await cluster.refreshMetadata()
          throw e
        }

        logger.error(`${e.message}`, { retryCount, retryTime })
        if (e.retriable) throw e
        bail(e)
      }
    })
  }
}

// Package nats is the NATS JetStream source and target of mqb, the way past
// one machine: a spool on each host in front of a JetStream cluster.
//
// The target publishes each message with its message id as the Nats-Msg-Id
// header, so that JetStream stores a batch delivered again after a crash
// only once (within the stream's duplicate window), and reports the batch
// written only after every publish was acknowledged by the stream.
//
// The source reads with a durable pull consumer and acknowledges messages
// to JetStream only when the route acknowledges them, after the target made
// them durable; a failed write sends a negative acknowledgement, so
// JetStream delivers the messages again at once. The message id comes back
// from Nats-Msg-Id, so an idempotent target recognises a redelivery.
//
//	mqb copy \
//	  --from 'dir-spool:///var/spool/orders' \
//	  --to 'nats://nats.internal:4222?subject=orders.eu&stream=ORDERS&create_stream=true'
//
//	mqb copy \
//	  --from 'nats://nats.internal:4222?subject=orders.>&stream=ORDERS&durable=orders-db' \
//	  --to 'postgres://app@db.internal/app?table=orders&id_column=message_id'
//
// Register adds the connector to an Env; importing the package adds it to
// bridge.DefaultEnv.
package nats

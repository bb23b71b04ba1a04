// Package mqtt is the MQTT 3.1.1 source and target of mqb (Eclipse Paho).
//
// The source subscribes with automatic acknowledgement turned off and sends
// a message's PUBACK only when the route acknowledges it, that is after the
// target has made the message durable. A message whose write failed is
// delivered again by the source itself; one that was never acknowledged when
// the process stopped is delivered again by the broker to the next session
// with the same client_id (clean_session=false, the default). Delivery is
// therefore at least once: a crash or a reconnect can repeat messages, never
// lose a QoS 1 or 2 message.
//
// The target publishes each message with the configured QoS and reports the
// batch written only after the broker has acknowledged every message of it
// (PUBACK for QoS 1, PUBCOMP for QoS 2).
//
// Both sides reconnect by themselves when the broker goes away, and the
// source subscribes again on every new connection.
//
//	mqb copy \
//	  --from 'mqtt://broker.local:1883?topic=telemetry/%23&client_id=telemetry-spool' \
//	  --to 'dir-spool:///var/spool/telemetry'
//
// In a route file:
//
//	input:
//	  mqtt: {broker: "broker.local:1883", topic: "telemetry/#", client_id: telemetry-spool}
//
// Register adds the connector to an Env; importing the package adds it to
// bridge.DefaultEnv.
package mqtt

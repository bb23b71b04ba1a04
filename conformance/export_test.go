package conformance

// Exported for the external tests only.
var (
	MakePayload  = makePayload
	ParsePayload = parsePayload
)

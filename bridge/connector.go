package bridge

import (
	"context"
	"errors"
	"net/url"

	"github.com/mqb-project/mqb/core/option"
)

// Message is one message moving through a route.
type Message struct {
	// ID identifies the message end to end (a spool's message_id, an MQTT
	// or NATS message id). Targets that can deduplicate use it; a source
	// that has none leaves it empty and the route assigns a UUIDv7.
	ID string
	// Metadata holds string key/value pairs (content_type, source, topic...).
	Metadata map[string]string
	// Payload is the message body, passed byte for byte.
	Payload []byte
	// Body, when not nil, stands for the payload instead, left where the
	// source found it (see StreamAbove); Payload is then nil. Len gives
	// the size either way.
	Body *Body
}

// AckFunc settles a batch read from a source. A nil err acknowledges every
// message of the batch: the source may forget it (delete the chunk, send
// PUBACK, ack to JetStream). A non-nil err negatively acknowledges it: the
// source delivers it again later.
type AckFunc func(ctx context.Context, err error) error

// ErrEndOfInput is returned by Source.ReadBatch when the source has nothing
// more to give (end of file, a drained spool, DONE seen). The route then ends
// cleanly.
var ErrEndOfInput = errors.New("end of input")

// Source is the reading side of a connector.
type Source interface {
	// Connect opens the source. It is called once before ReadBatch.
	Connect(ctx context.Context) error
	// ReadBatch returns between 1 and limit messages and the function that
	// settles them, or ErrEndOfInput. It blocks until messages arrive or
	// ctx ends. Batches may be read before earlier ones are settled.
	ReadBatch(ctx context.Context, limit int) ([]*Message, AckFunc, error)
	// Close releases the source. Unsettled messages are delivered again by
	// the next reader (at least once).
	Close(ctx context.Context) error
}

// Target is the writing side of a connector.
type Target interface {
	// Connect opens the target. It is called once before WriteBatch.
	Connect(ctx context.Context) error
	// WriteBatch writes msgs and returns nil only once all of them are
	// durable at the target; only then does the route acknowledge them at
	// the source. On error none of them is acknowledged (some may have been
	// written: targets should be idempotent on Message.ID where they can).
	WriteBatch(ctx context.Context, msgs []*Message) error
	// Close ends the target. cause is nil after a successful route and the
	// route's error otherwise (a dir-spool target writes DONE from it).
	Close(ctx context.Context, cause error) error
}

// Kind says which side of a connector an endpoint is used as.
type Kind int

// Endpoint kinds.
const (
	AsSource Kind = iota + 1
	AsTarget
)

func (k Kind) String() string {
	if k == AsSource {
		return "source"
	}
	return "target"
}

// Connector describes one kind of endpoint: its URL schemes, its option
// table (the same names in URL queries and YAML), and constructors.
type Connector struct {
	// Name is the YAML key of the endpoint, e.g. dir_spool.
	Name string
	// Schemes are the URL schemes, the first being the main one.
	Schemes []string
	// Schema is the option table. Its Name must equal Name.
	Schema *option.Schema
	// URLFields turns a URL into the same field map as YAML would give (for
	// example, the URL path becomes the path field). Query parameters must
	// be copied as fields of the same name: build on option.FromURL. Errors
	// should be *option.Error values. Nil means option.FromURL with
	// option.PathOwn: the query only.
	URLFields func(u *url.URL) (map[string]any, error)
	// NewSource builds a source from decoded options; nil if the connector
	// cannot be a source.
	NewSource func(env *Env, v *option.Values) (Source, error)
	// NewTarget builds a target from decoded options; nil if the connector
	// cannot be a target.
	NewTarget func(env *Env, v *option.Values) (Target, error)
	// TokenUser says that the user info of a URL without a password is a
	// token (nats://TOKEN@host), so Redact hides it like a password.
	TokenUser bool
}

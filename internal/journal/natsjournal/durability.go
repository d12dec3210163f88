package natsjournal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/nats-io/nats.go"
)

var _ journal.LaxDurability = (*Journal)(nil)

// Durability is what the journal found at start about how safe an
// acknowledged append is.
type Durability struct {
	Replicas int
	// SyncKnown says whether the servers' fsync setting could be read;
	// SyncAlways whether every server fsyncs each write.
	SyncKnown, SyncAlways bool
	// Lax lists what makes acknowledged entries losable, empty when
	// nothing does.
	Lax []string
}

// Durability reports what Open found about durability.
func (j *Journal) Durability() Durability { return j.durable }

// LaxDurability lists what makes acknowledged entries losable (the server
// exports it as a metric to alert on); empty when nothing does.
func (j *Journal) LaxDurability() []string { return j.durable.Lax }

// checkDurability reads the stream's replicas and the servers' fsync
// setting, through the system account if this connection may ask it, or
// else the monitoring endpoints.
func (j *Journal) checkDurability(ctx context.Context) Durability {
	var d Durability
	if si := j.stream.CachedInfo(); si != nil {
		d.Replicas = si.Config.Replicas
	}
	if d.Replicas < 3 {
		d.Lax = append(d.Lax, fmt.Sprintf("the stream has %d replica(s): one server's disk holds acknowledged entries; use 3 replicas on a 3-node cluster (--nats-replicas 3)", d.Replicas))
	}
	syncs, err := j.serverSync(ctx)
	switch {
	case err != nil:
		d.Lax = append(d.Lax, "the servers' sync_interval could not be read ("+err.Error()+"); make sure every server has jetstream { sync_interval: always }, and give --nats-monitor so formd can check")
	default:
		d.SyncKnown, d.SyncAlways = true, true
		for server, always := range syncs {
			if !always {
				d.SyncAlways = false
				d.Lax = append(d.Lax, "server "+server+" does not fsync each write: set jetstream { sync_interval: always }")
			}
		}
	}
	return d
}

// varz is the part of a server's /varz formd reads.
type varz struct {
	Name      string `json:"server_name"`
	JetStream struct {
		Config *struct {
			SyncAlways bool `json:"sync_always"`
		} `json:"config"`
	} `json:"jetstream"`
}

func (j *Journal) serverSync(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	// Through the system account: every server answers a ping.
	inbox := nats.NewInbox()
	sub, err := j.nc.SubscribeSync(inbox)
	if err == nil {
		defer sub.Unsubscribe() //nolint:errcheck // best effort
		if err := j.nc.PublishRequest("$SYS.REQ.SERVER.PING.VARZ", inbox, nil); err == nil {
			for {
				m, err := sub.NextMsg(500 * time.Millisecond)
				if err != nil {
					break
				}
				var resp struct {
					Data varz `json:"data"`
				}
				if json.Unmarshal(m.Data, &resp) == nil && resp.Data.JetStream.Config != nil {
					out[resp.Data.Name] = resp.Data.JetStream.Config.SyncAlways
				}
			}
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	if len(j.opts.MonitorURLs) == 0 {
		return nil, errors.New("not a system account user and no monitoring URL given")
	}
	client := &http.Client{Timeout: 3 * time.Second}
	for _, u := range j.opts.MonitorURLs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u, "/")+"/varz", nil)
		if err != nil {
			return nil, fmt.Errorf("monitoring URL %s: %w", u, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("monitoring URL %s: %w", u, err)
		}
		var v varz
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil || v.JetStream.Config == nil {
			return nil, fmt.Errorf("monitoring URL %s: no JetStream settings in /varz", u)
		}
		out[v.Name] = v.JetStream.Config.SyncAlways
	}
	return out, nil
}

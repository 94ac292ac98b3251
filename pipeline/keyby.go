package pipeline

import (
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/transform"
)

// warnDedupKeys warns of each dedup whose key is not what records are
// keyed by (pipeline.key_by): a dedup remembers a value within one key
// group, so two records with the same value and different key groups (two
// Kafka keys, say) both pass. That is right when records with the same
// value always share a Kafka key, which the job cannot know.
func warnDedupKeys(log zerolog.Logger, specs []transform.Spec, keyBy string) {
	for i, s := range specs {
		var key string
		switch c := s.Config.(type) {
		case transform.DedupConfig:
			key = c.Key
		case *transform.DedupConfig:
			key = c.Key
		default:
			continue
		}
		if key == keyBy {
			continue
		}
		log.Warn().Int("transform", i).Str("dedup_key", key).Str("key_by", keyByName(keyBy)).
			Msg("dedup is exact only among records of one key group, and records are keyed by another field: records with the same dedup key and different key groups are all kept; set pipeline.key_by to the dedup key, unless records with the same dedup key always share a Kafka key")
	}
}

package whatsapp

// Config is channels.whatsapp in botd's config file.
type Config struct {
	Enabled bool `yaml:"enabled"`
	// SessionDB is the whatsmeow device store on SQLite; empty means
	// <data_dir>/whatsapp.db (SessionPath). With database.driver postgres
	// the session lives in that database (SessionFor), and this file is
	// only what `botd database migrate` copies from.
	SessionDB string `yaml:"session_db"`
	// SharedNumber prefixes outbound text with the assistant name, for a
	// bot running on its owner's own number.
	SharedNumber bool `yaml:"shared_number"`
}

// DefaultConfig is the section a config file is decoded over: disabled,
// the session next to botd's database, a number of the bot's own.
func DefaultConfig() Config { return Config{} }

// Validate reports the section's problems. Every value is valid on its
// own: pairing, not a token, is what the channel needs, and Start says
// when it is missing.
func (c Config) Validate() error { return nil }

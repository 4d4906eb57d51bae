package main

import (
	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/generate"
	"github.com/botd-dev/botd/media/generation"
)

// generation builds media.generation's clients (none when none is set)
// and its settings; newMedia wires the rest.
func (d *daemon) generation() (generation.Options, error) {
	c := *config.Section[generation.Config](d.cfg)
	tools := generateTools(d.cfg)
	if !tools.Image && !tools.Speech && !tools.Video {
		return generation.Options{}, nil
	}
	g := generation.Options{Voice: c.Speech.Voice, VideoTimeout: c.Video.Timeout.D(), VideoJobsPerGroup: c.Video.MaxJobsPerGroup,
		Ledger: d.store, MaxCostPerDay: agent.USD(config.Section[agent.Config](d.cfg).MaxCostPerDay), Location: d.cfg.Location(),
		AssistantName: d.cfg.AssistantName}
	var err error
	if tools.Image {
		o, m := d.genOptions(c.Image.Ref(), c.Image.Price)
		if g.Imager, err = generate.NewImager(o); err != nil {
			return g, fail(1, "media.generation.image: %v", err)
		}
		g.ImageModel = m
	}
	if tools.Speech {
		o, m := d.genOptions(c.Speech.Ref(), c.Speech.Price)
		if g.Speaker, err = generate.NewSpeaker(o); err != nil {
			return g, fail(1, "media.generation.speech: %v", err)
		}
		g.SpeechModel = m
	}
	if tools.Video {
		o, m := d.genOptions(c.Video.Ref(), c.Video.Price)
		if g.Videos, err = generate.NewVideos(o); err != nil {
			return g, fail(1, "media.generation.video: %v", err)
		}
		g.VideoModel = m
	}
	return g, nil
}

// genOptions is the client options and the billed model of one entry; a
// configured price wins over the known list price.
func (d *daemon) genOptions(mm media.ModelRef, price float64) (generate.Options, generation.Model) {
	p := d.cfg.LLM.Providers[mm.Provider]
	o := generate.Options{Name: mm.Provider, Type: p.Type, BaseURL: p.BaseURL, APIKey: p.APIKey, Model: mm.Model,
		MaxBytes: config.Section[media.Config](d.cfg).MaxDownloadBytes}
	m := generation.Model{Provider: mm.Provider, Name: mm.Model}
	if price > 0 {
		m.Price = generate.Price{PerUnit: price}
	} else if known, ok := generate.PriceOf(mm.Model); ok {
		m.Price = known
	}
	return o, m
}

// generateTools says which generation tools the config makes work.
func generateTools(cfg *config.Config) mcp.GenerateTools {
	g := *config.Section[generation.Config](cfg)
	return mcp.GenerateTools{Image: g.Image.Provider != "", Speech: g.Speech.Provider != "", Video: g.Video.Provider != ""}
}

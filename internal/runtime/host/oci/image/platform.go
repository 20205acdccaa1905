package image

import (
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// platform parses a Source's Platform; empty is the host's.
func platform(s string) (v1.Platform, error) {
	if s == "" {
		s = hostPlatform()
	}
	p, err := v1.ParsePlatform(s)
	if err != nil || p.OS == "" || p.Architecture == "" || p.OSVersion != "" {
		return v1.Platform{}, errdefs.Invalid(CodeInvalid, "platform %q is not os/arch[/variant], such as linux/amd64", s)
	}
	return *p, nil
}

// defaultVariant is the variant an architecture has when none is named,
// as containerd's platforms package normalises them.
func defaultVariant(arch string) string {
	switch arch {
	case "arm64":
		return "v8"
	case "arm":
		return "v7"
	}
	return ""
}

// variantOf is p's variant, or its architecture's default one.
func variantOf(p v1.Platform) string {
	if p.Variant != "" {
		return p.Variant
	}
	return defaultVariant(p.Architecture)
}

// pick chooses the manifest for want among an index's. A manifest whose
// variant is named must have want's; when want names none, one of the
// architecture's default variant wins over the others. An index whose
// only entry says no platform is taken to mean it, and its config
// checked instead.
func pick(idx *v1.IndexManifest, want v1.Platform) (v1.Descriptor, error) {
	var found []v1.Descriptor
	for _, d := range idx.Manifests {
		if !d.MediaType.IsImage() && !d.MediaType.IsIndex() {
			continue // attestations, signatures and other artifacts
		}
		if d.Platform == nil {
			if len(idx.Manifests) == 1 {
				return d, nil
			}
			continue
		}
		p := *d.Platform
		if p.OS != want.OS || p.Architecture != want.Architecture {
			continue
		}
		if want.Variant != "" && variantOf(p) != variantOf(want) {
			continue
		}
		found = append(found, d)
	}
	if len(found) == 0 {
		return v1.Descriptor{}, errdefs.New(errdefs.ErrNotFound, CodePlatform,
			"the image has no manifest for %s; it has one for %s", want, platformsOf(idx))
	}
	for _, d := range found {
		if variantOf(*d.Platform) == variantOf(want) {
			return d, nil
		}
	}
	return found[0], nil
}

// platformsOf lists the platforms an index has manifests for, for a
// message: sorted, without the "unknown/unknown" of attestations.
func platformsOf(idx *v1.IndexManifest) string {
	var ps []string
	for _, d := range idx.Manifests {
		if d.Platform == nil || d.Platform.OS == "unknown" || !(d.MediaType.IsImage() || d.MediaType.IsIndex()) {
			continue
		}
		if s := d.Platform.String(); s != "" {
			ps = append(ps, s)
		}
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	if len(ps) == 0 {
		return "no platform it names"
	}
	return strings.Join(ps, ", ")
}

// checkPlatform refuses a config made for another platform than want. A
// config that does not say is taken at its word.
func checkPlatform(cfg *v1.ConfigFile, want v1.Platform) error {
	if cfg.OS == "" || cfg.Architecture == "" {
		return nil
	}
	have := v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
	if have.OS == want.OS && have.Architecture == want.Architecture &&
		(want.Variant == "" || have.Variant == "" || variantOf(have) == variantOf(want)) {
		return nil
	}
	return errdefs.New(errdefs.ErrNotFound, CodePlatform, "the image is for %s, not %s", have, want)
}

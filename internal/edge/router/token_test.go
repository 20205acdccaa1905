package router

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	s := signer{key: bytes.Repeat([]byte{7}, KeyBytes)}
	now := time.Unix(1_900_000_000, 0)
	tgt := Target{testID, 3000}
	exp := now.Add(time.Hour)
	const keyID = "k0a1b2c3d4e5"
	tok := s.sign(purposeURL, tgt, keyID, exp)
	if id, got, err := s.verify(purposeURL, tok, tgt, now); err != nil || !got.Equal(exp) || id != keyID {
		t.Fatalf("verify(good) = %q, %v, %v", id, got, err)
	}
	flip := func(tok string) string {
		b := []byte(tok)
		i := len(b) - 2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	parts := strings.Split(tok, ".")
	e, mac := parts[1], parts[2]
	for _, tt := range []struct {
		name    string
		purpose string
		tok     string
		tgt     Target
		now     time.Time
		want    error
	}{
		{"expired", purposeURL, tok, tgt, exp, errTokenExpired},
		{"long expired", purposeURL, tok, tgt, exp.Add(time.Hour), errTokenExpired},
		{"tampered MAC", purposeURL, flip(tok), tgt, now, errTokenBad},
		{"later expiry", purposeURL, keyID + ".1900009999." + mac, tgt, now, errTokenBad},
		{"another key id", purposeURL, "k0a1b2c3d4e6." + e + "." + mac, tgt, now, errTokenBad},
		{"another port", purposeURL, tok, Target{testID, 3001}, now, errTokenBad},
		{"another sandbox", purposeURL, tok, Target{"01jq3v9x7k2m4n6p8r0s2t4v6x", 3000}, now, errTokenBad},
		{"a cookie's purpose", purposeSession, tok, tgt, now, errTokenBad},
		{"another key", purposeURL, signer{key: bytes.Repeat([]byte{8}, KeyBytes)}.sign(purposeURL, tgt, keyID, exp), tgt, now, errTokenBad},
		{"no key id (signed before)", purposeURL, e + "." + mac, tgt, now, errTokenMalformed},
		{"empty key id", purposeURL, "." + e + "." + mac, tgt, now, errTokenMalformed},
		{"key id not lowercase", purposeURL, "K0A1B2C3D4E5." + e + "." + mac, tgt, now, errTokenMalformed},
		{"no dot", purposeURL, keyID + e + mac, tgt, now, errTokenMalformed},
		{"one dot", purposeURL, keyID + "." + e + mac, tgt, now, errTokenMalformed},
		{"empty", purposeURL, "", tgt, now, errTokenMalformed},
		{"negative expiry", purposeURL, keyID + ".-5." + mac, tgt, now, errTokenMalformed},
		{"leading zero", purposeURL, keyID + ".0" + e + "." + mac, tgt, now, errTokenMalformed},
		{"too far ahead", purposeURL, s.sign(purposeURL, tgt, keyID, now.Add(MaxURLTTL+2*time.Minute)), tgt, now, errTokenMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := s.verify(tt.purpose, tt.tok, tt.tgt, tt.now); err != tt.want {
				t.Fatalf("verify = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestTokensKept: tokens a server signed before keep verifying with the
// same key (preview.key outlives a restart and an upgrade); those signed
// before tokens named their key are refused.
func TestTokensKept(t *testing.T) {
	s := signer{key: bytes.Repeat([]byte{7}, KeyBytes)}
	now := time.Unix(1_900_000_000, 0)
	exp := time.Unix(1_900_003_600, 0)
	const keyID = "k0a1b2c3d4e5"
	for _, tt := range []struct {
		purpose string
		tgt     Target
		tok     string
	}{
		{purposeURL, Target{testID, 3000}, "k0a1b2c3d4e5.1900003600.Scmwgh-E8CQ_h2JpwH7QBtZWyWsYenr6V4f-_CL554w"},
		{purposeSession, Target{testID, 3000}, "k0a1b2c3d4e5.1900003600.1nt5nSjfphcC7Gyoc12l-pNkkRiGlv_z02Ej0C0B4iU"},
		{purposeSession, appSubject("01jq3v9x7k2m4n6p8r0s2t4v6y"), "k0a1b2c3d4e5.1900003600.4VJ0XMoXj1fW-J8xW4zMbSx_RvZGCEkNWar5DJ10eGk"},
	} {
		if got := s.sign(tt.purpose, tt.tgt, keyID, exp); got != tt.tok {
			t.Errorf("sign(%s, %v) = %s, want %s", tt.purpose, tt.tgt, got, tt.tok)
		}
		if id, got, err := s.verify(tt.purpose, tt.tok, tt.tgt, now); err != nil || !got.Equal(exp) || id != keyID {
			t.Errorf("verify(%s) = %q, %v, %v", tt.tok, id, got, err)
		}
	}
	for _, tt := range []struct {
		purpose string
		tgt     Target
		tok     string
	}{
		{purposeURL, Target{testID, 3000}, "1900003600.ciPNUqGeAXoaimLGHltR8a0dmEjHwixJiHzTpA96gME"},
		{purposeSession, Target{testID, 3000}, "1900003600.7XVai7krOWX1ibb4s-YI3hiBegMD89e17DbpWN1r5b4"},
		{purposeSession, appSubject("01jq3v9x7k2m4n6p8r0s2t4v6y"), "1900003600.9Ly6YRCA5pPPl84PelZpryyQP8XBEOj_zaE_IYFzLnA"},
	} {
		if _, _, err := s.verify(tt.purpose, tt.tok, tt.tgt, now); err != errTokenMalformed {
			t.Errorf("verify(%s), a token without its key: %v, want %v", tt.tok, err, errTokenMalformed)
		}
	}
}

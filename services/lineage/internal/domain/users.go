package domain

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/platform/slackid"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// DefaultAdminUser is the admin's key when ZIMMER_ADMIN_USER is unset: the
// one human responsible for anything typed into the Zimmer web UI.
const DefaultAdminUser = "tadasant"

// Bounds of a roster row.
const (
	MaxDisplayNameLength = 200
	MaxEmailLength       = 320
	MaxNotesLength       = 10_000
	MaxSlackIDsPerUser   = 20
)

// ErrAlreadyExists means a thing with the same identity exists already.
var ErrAlreadyExists = errors.New("already exists")

// ErrConflict means the change contradicts an invariant held by other rows.
var ErrConflict = errors.New("conflict")

var userKeyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// User is one row of the roster: a human Zimmer can attribute words to. It
// is not authentication — Zimmer has no login — only something durable to
// attribute to once an input boundary has established who spoke.
type User struct {
	// Key is the stable identity string human messages store verbatim. It
	// never changes once created: renaming would orphan every message the
	// human already authored.
	Key         string
	DisplayName string
	// Email is a linkage, not a capture path; empty when unknown.
	Email string
	// SlackUserIDs are deployment configuration; one ID never belongs to two
	// users.
	SlackUserIDs []string
	// Notes is free-form operator context that travels with the messages.
	Notes     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// UserPatch is an edit of a roster row; nil fields are left as they are.
// There is deliberately no Key: keys are immutable.
type UserPatch struct {
	DisplayName  *string
	Email        *string
	SlackUserIDs *[]string
	Notes        *string
}

// Apply edits u in place and reports the first invalid field.
func (p UserPatch) Apply(u *User) error {
	if p.DisplayName != nil {
		u.DisplayName = *p.DisplayName
	}
	if p.Email != nil {
		u.Email = *p.Email
	}
	if p.SlackUserIDs != nil {
		u.SlackUserIDs = slices.Clone(*p.SlackUserIDs)
	}
	if p.Notes != nil {
		u.Notes = *p.Notes
	}
	u.Normalize()
	return u.Validate()
}

// Empty reports whether the patch changes nothing.
func (p UserPatch) Empty() bool {
	return p.DisplayName == nil && p.Email == nil && p.SlackUserIDs == nil && p.Notes == nil
}

// Normalize reads what an operator typed the way they meant it, so that it
// is stored one way and equal rosters compare equal: every field trimmed;
// the email lower-cased, because addresses are compared ignoring case;
// Slack IDs with blanks dropped, a repeat merged rather than refused, and
// sorted.
func (u *User) Normalize() {
	u.Key = strings.TrimSpace(u.Key)
	u.DisplayName = strings.TrimSpace(u.DisplayName)
	u.Email = strings.ToLower(strings.TrimSpace(u.Email))
	ids := make([]string, 0, len(u.SlackUserIDs))
	for _, id := range u.SlackUserIDs {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	u.SlackUserIDs = slices.Compact(ids)
}

// Validate reports the first field that makes u unusable as a roster row.
func (u User) Validate() error {
	if err := ValidateUserKey(u.Key); err != nil {
		return err
	}
	switch {
	case u.DisplayName == "":
		return validation.Invalid("display_name", "required")
	case utf8.RuneCountInString(u.DisplayName) > MaxDisplayNameLength:
		return validation.Invalid("display_name", "at most %d characters", MaxDisplayNameLength)
	case len(u.Email) > MaxEmailLength:
		return validation.Invalid("email", "at most %d characters", MaxEmailLength)
	case u.Email != "" && (strings.Count(u.Email, "@") != 1 || strings.ContainsAny(u.Email, " \t\r\n<>")):
		return validation.Invalid("email", "must be an address like name@example.com, or empty")
	case utf8.RuneCountInString(u.Notes) > MaxNotesLength:
		return validation.Invalid("notes", "at most %d characters", MaxNotesLength)
	case len(u.SlackUserIDs) > MaxSlackIDsPerUser:
		return validation.Invalid("slack_user_ids", "at most %d IDs", MaxSlackIDsPerUser)
	}
	for i, id := range u.SlackUserIDs {
		if !slackid.Valid(id) {
			return validation.Invalid("slack_user_ids", "%q is not a Slack user ID (%s)", id, slackid.Shape)
		}
		if slices.Contains(u.SlackUserIDs[:i], id) {
			return validation.Invalid("slack_user_ids", "%q is listed twice", id)
		}
	}
	return nil
}

// userKeyShape says what a roster key must look like, wherever one is refused.
const userKeyShape = "must be 1-63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"

// ValidateUserKey checks the shape of a roster key.
func ValidateUserKey(key string) error { return validateUserKey("key", key) }

// validateUserKey checks the shape of a roster key sent as field.
func validateUserKey(field, key string) error {
	if !userKeyPattern.MatchString(key) {
		return validation.Invalid(field, userKeyShape)
	}
	return nil
}

// SlackIDTakenError is the ErrConflict of a Slack user ID that already
// belongs to another user. It names both users, so the operator sees at once
// whose row to edit.
type SlackIDTakenError struct {
	SlackUserID string
	// Owner is the user holding it, when known.
	Owner string
	// Claimant is the user the edit tried to give it to, when known.
	Claimant string
}

func (e *SlackIDTakenError) Error() string {
	claim := "another user"
	if e.Claimant != "" {
		claim = fmt.Sprintf("user %q", e.Claimant)
	}
	if e.Owner == "" {
		return fmt.Sprintf("slack user ID %s already belongs to another user, so it cannot also be %s's; one ID never belongs to two users: remove it there first",
			e.SlackUserID, claim)
	}
	return fmt.Sprintf("slack user ID %s already belongs to user %q, so it cannot also be %s's; one ID never belongs to two users: remove it from %q first",
		e.SlackUserID, e.Owner, claim, e.Owner)
}

func (e *SlackIDTakenError) Unwrap() error { return ErrConflict }

// EmailTakenError is the ErrConflict of an email address (compared ignoring
// case) that already belongs to another user.
type EmailTakenError struct {
	Email string
	// Owner is the user holding it, when known.
	Owner string
}

func (e *EmailTakenError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("email %s already belongs to another user; addresses are compared ignoring case", e.Email)
	}
	return fmt.Sprintf("email %s already belongs to user %q; addresses are compared ignoring case", e.Email, e.Owner)
}

func (e *EmailTakenError) Unwrap() error { return ErrConflict }

// UserExistsError is the ErrAlreadyExists of a roster key in use.
type UserExistsError struct{ Key string }

func (e *UserExistsError) Error() string {
	return fmt.Sprintf("user %q already exists; keys are permanent, edit that row instead", e.Key)
}

func (e *UserExistsError) Unwrap() error { return ErrAlreadyExists }

// UserNotFound is the ErrNotFound of a roster key no row holds.
func UserNotFound(key string) error {
	return &notFoundError{msg: fmt.Sprintf("no user with key %q", key)}
}

// Roster is the users, looked up by key.
type Roster map[string]User

// NewRoster indexes users by key.
func NewRoster(users []User) Roster {
	r := make(Roster, len(users))
	for _, u := range users {
		r[u.Key] = u
	}
	return r
}

// Admin resolves the admin's key to a user. A key naming nobody — a typo, a
// deleted row — resolves to nobody, and web-UI capture then records nothing
// rather than guessing. An empty key means DefaultAdminUser.
func (r Roster) Admin(adminKey string) (User, bool) {
	if adminKey = strings.TrimSpace(adminKey); adminKey == "" {
		adminKey = DefaultAdminUser
	}
	u, ok := r[adminKey]
	return u, ok
}

// BySlackID resolves a Slack user ID to its user; an ID on no row resolves
// to nobody rather than inventing an author.
func (r Roster) BySlackID(slackUserID string) (User, bool) {
	if slackUserID == "" {
		return User{}, false
	}
	for _, u := range r {
		if slices.Contains(u.SlackUserIDs, slackUserID) {
			return u, true
		}
	}
	return User{}, false
}

package encode

import (
	"errors"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// UTF8Error is the error of a request whose string field holds invalid UTF-8 where its
// syntax requires valid UTF-8 (proto3, or editions with utf8_validation VERIFY). protobuf's
// fast path reports it without naming the field; Append finds the field, on the error path
// only, and names it.
type UTF8Error struct {
	// Field is the full name of the field, for example "network.Player.name"; for a map,
	// the map field's.
	Field protoreflect.FullName
	// In is "" for a string field or an element of a repeated one, "key" or "value" for a
	// map's.
	In string

	err error // protobuf's error
}

// Error returns "string field <full name> contains invalid UTF-8", with "(a map key)" or
// "(a map value)" for a map.
func (e *UTF8Error) Error() string {
	msg := "string field " + string(e.Field) + " contains invalid UTF-8"
	if e.In != "" {
		msg += " (a map " + e.In + ")"
	}
	return msg
}

// Unwrap returns protobuf's error, so that errors.Is(err, proto.Error) holds.
func (e *UTF8Error) Unwrap() error { return e.err }

// nameInvalidUTF8 returns err as a *UTF8Error naming the field of m that holds invalid UTF-8,
// if err is protobuf's invalid-UTF-8 error and the field is found; otherwise err.
func nameInvalidUTF8(err error, m protoreflect.Message) error {
	var u interface{ InvalidUTF8() bool }
	if !errors.As(err, &u) || !u.InvalidUTF8() {
		return err
	}
	if f, in, found := findInvalidUTF8(m); found {
		return &UTF8Error{Field: f.FullName(), In: in, err: err}
	}
	return err
}

// findInvalidUTF8 returns the first field of m, depth first, whose string value (or map key
// or value, "key" or "value" in in) is invalid UTF-8 where its syntax requires valid UTF-8.
func findInvalidUTF8(m protoreflect.Message) (field protoreflect.FieldDescriptor, in string, found bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			kd, vd := fd.MapKey(), fd.MapValue()
			v.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				switch {
				case invalidString(kd, k.Value()):
					field, in, found = fd, "key", true
				case invalidString(vd, v):
					field, in, found = fd, "value", true
				case vd.Message() != nil:
					field, in, found = findInvalidUTF8(v.Message())
				}
				return !found
			})
		case fd.IsList():
			list := v.List()
			for i := 0; i < list.Len() && !found; i++ {
				if fd.Message() != nil {
					field, in, found = findInvalidUTF8(list.Get(i).Message())
				} else if invalidString(fd, list.Get(i)) {
					field, found = fd, true
				}
			}
		case fd.Message() != nil:
			field, in, found = findInvalidUTF8(v.Message())
		case invalidString(fd, v):
			field, found = fd, true
		}
		return !found
	})
	return field, in, found
}

// invalidString reports whether v, a value of fd, is a string that must be valid UTF-8 and
// is not, by the rule protobuf applies (internal/strs.EnforceUTF8).
func invalidString(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	if fd.Kind() != protoreflect.StringKind || utf8.ValidString(v.String()) {
		return false
	}
	if fd.Syntax() == protoreflect.Editions {
		if e, ok := fd.(interface{ EnforceUTF8() bool }); ok {
			return e.EnforceUTF8()
		}
	}
	return fd.Syntax() == protoreflect.Proto3
}

package unsafecap

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"unsafe"
)

// Connector may only read over HTTP; it digs the client out of its read
// capability with reflection and unsafe, and posts with it.
type Connector struct{}

// Run posts to the input's URL through its read capability's insides.
func (Connector) Run(ctx Context, _ Params, in Input) (out Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			r := fmt.Sprint("refused: ", p)
			out, err = Output{Result: &r}, nil
		}
	}()
	held := reflect.ValueOf(ctx.rt.Caps().HTTPRead)
	if held.Kind() == reflect.Pointer {
		held = held.Elem()
	}
	v := reflect.New(held.Type()).Elem()
	v.Set(held)
	f := v.Field(0) // the backend behind the narrow reader type
	f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	do := f.MethodByName("Do")
	res := do.Call([]reflect.Value{
		reflect.ValueOf(context.Context(ctx)), reflect.ValueOf(http.MethodPost), reflect.ValueOf(*in.URL),
		reflect.ValueOf(http.Header{}), reflect.ValueOf([]byte("written through a read")),
	})
	r := fmt.Sprint("posted: ", res[1].Interface())
	return Output{Result: &r}, nil
}

package connectorvet

import "strings"

// Rule names a kind of finding. Every finding has exactly one.
type Rule string

// The rules. Those for which Waivable is false can never be accepted by a
// //flowgen:allow comment.
const (
	Clock     Rule = "clock"     // reading the wall or monotonic clock
	Rand      Rule = "rand"      // unseeded randomness
	Env       Rule = "env"       // environment variables
	Host      Rule = "host"      // process and host information and settings
	FS        Rule = "fs"        // reading the file system
	Write     Rule = "write"     // changing the file system
	Exec      Rule = "exec"      // starting, signalling or ending processes
	Net       Rule = "net"       // network: dial, listen, DNS, HTTP clients, databases
	Syscall   Rule = "syscall"   // system calls and linkname'd runtime functions
	Unsafe    Rule = "unsafe"    // unsafe.Pointer and reflect's unsafe escapes
	Reflect   Rule = "reflect"   // calling methods found by reflection
	Plugin    Rule = "plugin"    // loading code at run time
	Cgo       Rule = "cgo"       // C code
	Asm       Rule = "asm"       // assembly outside the standard library
	Goroutine Rule = "goroutine" // go statements and finalizers
	Select    Rule = "select"    // select over several channels
	MapOrder  Rule = "maporder"  // output built in map iteration order
	Global    Rule = "global"    // package state written from Run (Strict, Stable)
	Bypass    Rule = "bypass"    // reaching the runtime's internals, not the capabilities
	Excluded  Rule = "excluded"  // code the certified build does not compile
	Trust     Rule = "trust"     // the build is not the one consumers get
)

// Waivable reports whether a //flowgen:allow comment may accept a finding
// of r. Rules that let a connector act outside its declared capabilities,
// or that stop certification from seeing the code that runs, never are.
func (r Rule) Waivable() bool {
	switch r {
	case Env, FS, Write, Exec, Net, Syscall, Plugin, Cgo, Bypass, Excluded, Trust:
		return false
	}
	return true
}

// Fix is the general advice for a rule.
func (r Rule) Fix() string {
	switch r {
	case Clock:
		return "declare the clock capability and use ctx.Now"
	case Rand:
		return "declare rng.seeded (or rng) and use ctx.Uint64"
	case Env:
		return "take the value as a param, or a secret by handle (ctx.Secret)"
	case Host:
		return "do not depend on the host: take the value as a param"
	case FS:
		return "declare blob.read and use ctx.ReadBlob; embed files the connector ships with"
	case Write:
		return "declare effects: Effectful and blob.write, and use ctx.WriteBlob"
	case Exec:
		return "connectors never manage processes: return an error instead"
	case Net:
		return "declare http.read/http.write or db.read/db.write and use the capability, which enforces egress and is recorded"
	case Syscall:
		return "use the standard library's portable APIs through the capabilities"
	case Unsafe:
		return "use safe Go, or waive with a reason"
	case Reflect:
		return "call methods directly"
	case Plugin:
		return "link everything the connector runs"
	case Cgo:
		return "use pure Go dependencies"
	case Asm:
		return "use a pure Go implementation, or waive with a reason"
	case Goroutine:
		return "do the work in Run, in order"
	case Select:
		return "wait on one channel, or on one channel and ctx.Done()"
	case MapOrder:
		return "sort the keys first (slices.Sorted(maps.Keys(m)))"
	case Global:
		return "keep state in locals, or in the KV capability"
	case Bypass:
		return "use the capabilities the generated Context exposes"
	case Excluded:
		return "remove the file, or drop its build constraint"
	case Trust:
		return "build against the published flowgen, without replace directives"
	}
	return ""
}

// sinkSpec classifies the members of one package: a default rule for
// every function, method and variable ("" when the package is harmless),
// and exceptions by name: "Func", "Type.Method", "Type.*" for every method
// of a type, or "Var".
type sinkSpec struct {
	all    Rule
	except map[string]Rule
}

// allowed marks a member as harmless in a package whose default is a rule.
const allowed Rule = "-"

// stdSinks classifies the standard library (and the system packages of
// golang.org/x/sys). A package that is not here is harmless: pure
// computation, or I/O only through values the connector already holds. A
// package that is here fails closed: a member not listed takes the
// package's rule, so an API added to it later is a finding until someone
// decides otherwise.
var stdSinks = map[string]sinkSpec{
	"time": {except: map[string]Rule{
		"Now": Clock, "Since": Clock, "Until": Clock,
		"LoadLocation": Host, "Local": Host, "Time.Local": Host,
	}},
	"os": {all: FS, except: map[string]Rule{
		"Getenv": Env, "LookupEnv": Env, "Environ": Env, "ExpandEnv": Env, "Setenv": Env, "Unsetenv": Env, "Clearenv": Env,
		"Hostname": Host, "Getpid": Host, "Getppid": Host, "Getuid": Host, "Geteuid": Host, "Getgid": Host, "Getegid": Host,
		"Getgroups": Host, "Getpagesize": Host, "Executable": Host, "Getwd": Host, "UserHomeDir": Host, "UserCacheDir": Host,
		"UserConfigDir": Host, "TempDir": Host, "Args": Host, "Stdin": Host, "Chdir": Host,
		"StartProcess": Exec, "FindProcess": Exec, "Exit": Exec, "Process.*": Exec, "Interrupt": Exec, "Kill": Exec,
		"WriteFile": Write, "Create": Write, "OpenFile": Write, "Remove": Write, "RemoveAll": Write, "Mkdir": Write,
		"MkdirAll": Write, "MkdirTemp": Write, "CreateTemp": Write, "Rename": Write, "Symlink": Write, "Link": Write,
		"Chmod": Write, "Chown": Write, "Lchown": Write, "Chtimes": Write, "Truncate": Write, "CopyFS": Write,
		"File.Chmod": Write, "File.Chown": Write, "File.Truncate": Write, "File.Chdir": Write,
		// Writing to stdout and stderr is logging; a *File the connector
		// holds came from a call above, which is the finding.
		"Stdout": allowed, "Stderr": allowed, "File.Write": allowed, "File.WriteString": allowed, "File.WriteAt": allowed,
		"File.Name": allowed, "File.Close": allowed, "File.Fd": allowed, "File.Sync": allowed, "File.Read": allowed,
		"IsExist": allowed, "IsNotExist": allowed, "IsPermission": allowed, "IsTimeout": allowed, "NewSyscallError": allowed,
		"ErrNotExist": allowed, "ErrExist": allowed, "ErrPermission": allowed, "ErrClosed": allowed, "ErrDeadlineExceeded": allowed,
		"ErrInvalid": allowed, "ErrProcessDone": allowed, "ErrNoDeadline": allowed,
		"PathError.*": allowed, "LinkError.*": allowed, "SyscallError.*": allowed, "FileMode.*": allowed,
		"IsPathSeparator": allowed, "ModeDir": allowed, "ModePerm": allowed, "DevNull": allowed,
	}},
	"io/ioutil":                {except: map[string]Rule{"ReadFile": FS, "ReadDir": FS, "WriteFile": Write, "TempFile": Write, "TempDir": Write}},
	"path/filepath":            {except: map[string]Rule{"Abs": Host, "EvalSymlinks": FS, "Glob": FS, "Walk": FS, "WalkDir": FS}},
	"os/exec":                  {all: Exec},
	"os/signal":                {all: Exec},
	"os/user":                  {all: Host},
	"syscall":                  {all: Syscall, except: map[string]Rule{"Errno.*": allowed, "Signal.*": allowed}},
	"golang.org/x/sys/unix":    {all: Syscall, except: map[string]Rule{"Errno.*": allowed, "Signal.*": allowed}},
	"golang.org/x/sys/windows": {all: Syscall, except: map[string]Rule{"Errno.*": allowed}},
	"golang.org/x/sys/execabs": {all: Exec},
	"plugin":                   {all: Plugin},
	"net": {all: Net, except: map[string]Rule{
		"ParseIP": allowed, "ParseCIDR": allowed, "IPv4": allowed, "IPv4Mask": allowed, "CIDRMask": allowed,
		"JoinHostPort": allowed, "SplitHostPort": allowed, "ParseMAC": allowed, "IP.*": allowed, "IPNet.*": allowed,
		"IPMask.*": allowed, "HardwareAddr.*": allowed, "IPAddr.*": allowed, "TCPAddr.*": allowed, "UDPAddr.*": allowed,
		"UnixAddr.*": allowed, "TCPAddrFromAddrPort": allowed, "UDPAddrFromAddrPort": allowed,
		"AddrError.*": allowed, "OpError.*": allowed, "DNSError.*": allowed, "ParseError.*": allowed,
		"InvalidAddrError.*": allowed, "UnknownNetworkError.*": allowed, "ErrClosed": allowed,
		"IPv4bcast": allowed, "IPv4allsys": allowed, "IPv4allrouter": allowed, "IPv4zero": allowed, "IPv6zero": allowed,
		"IPv6unspecified": allowed, "IPv6loopback": allowed, "IPv4len": allowed, "IPv6len": allowed,
	}},
	"net/http": {except: map[string]Rule{
		"Get": Net, "Head": Net, "Post": Net, "PostForm": Net, "Client.*": Net, "Transport.*": Net,
		"DefaultClient": Net, "DefaultTransport": Net, "ListenAndServe": Net, "ListenAndServeTLS": Net,
		"Serve": Net, "ServeTLS": Net, "Server.*": Net, "ProxyFromEnvironment": Env,
		"FileServer": FS, "ServeFile": FS, "Dir.Open": FS, "FileServerFS": FS, "ServeFileFS": FS,
	}},
	"net/http/httputil": {except: map[string]Rule{"DumpRequestOut": Net, "ReverseProxy.*": Net, "NewSingleHostReverseProxy": Net, "NewProxyClientConn": Net, "NewClientConn": Net}},
	"net/http/httptest": {except: map[string]Rule{"NewServer": Net, "NewTLSServer": Net, "NewUnstartedServer": Net, "Server.*": Net}},
	"net/smtp":          {all: Net},
	"net/rpc":           {all: Net},
	"net/rpc/jsonrpc":   {all: Net},
	"log/syslog":        {all: Net},
	"net/textproto":     {except: map[string]Rule{"Dial": Net}},
	"crypto/tls":        {except: map[string]Rule{"Dial": Net, "DialWithDialer": Net, "Dialer.*": Net, "Listen": Net, "LoadX509KeyPair": FS}},
	"crypto/x509":       {except: map[string]Rule{"SystemCertPool": FS}},
	"database/sql":      {except: map[string]Rule{"Open": Net, "OpenDB": Net, "Register": Net, "DB.*": Net, "Conn.*": Net}},
	"crypto/rand":       {all: Rand},
	"crypto/ecdsa":      {except: map[string]Rule{"GenerateKey": Rand, "Sign": Rand, "SignASN1": Rand, "PrivateKey.Sign": Rand}},
	"crypto/rsa":        {except: map[string]Rule{"GenerateKey": Rand, "GenerateMultiPrimeKey": Rand, "EncryptOAEP": Rand, "EncryptPKCS1v15": Rand, "SignPSS": Rand, "PrivateKey.Sign": Rand}},
	"crypto/ed25519":    {except: map[string]Rule{"GenerateKey": Rand}},
	"crypto/ecdh":       {except: map[string]Rule{"Curve.GenerateKey": Rand}},
	"crypto/elliptic":   {except: map[string]Rule{"GenerateKey": Rand}},
	"crypto/dsa":        {except: map[string]Rule{"GenerateKey": Rand, "GenerateParameters": Rand, "Sign": Rand}},
	"crypto/mlkem":      {except: map[string]Rule{"GenerateKey768": Rand, "GenerateKey1024": Rand, "EncapsulationKey768.Encapsulate": Rand, "EncapsulationKey1024.Encapsulate": Rand}},
	"crypto/cipher":     {except: map[string]Rule{"NewGCMWithRandomNonce": Rand}},
	"hash/maphash":      {all: Rand},
	"math/rand":         {all: Rand, except: map[string]Rule{"New": allowed, "NewSource": allowed, "NewZipf": allowed, "Rand.*": allowed, "Zipf.*": allowed}},
	"math/rand/v2":      {all: Rand, except: map[string]Rule{"New": allowed, "NewPCG": allowed, "NewChaCha8": allowed, "NewZipf": allowed, "Rand.*": allowed, "PCG.*": allowed, "ChaCha8.*": allowed, "Zipf.*": allowed}},
	"runtime":           {except: map[string]Rule{"NumCPU": Host, "GOMAXPROCS": Host, "NumGoroutine": Host, "ReadMemStats": Host, "GOROOT": Host, "NumCgoCall": Host, "SetFinalizer": Goroutine, "AddCleanup": Goroutine}},
	"runtime/debug":     {except: map[string]Rule{"SetGCPercent": Host, "SetMaxStack": Host, "SetMaxThreads": Host, "SetMemoryLimit": Host, "SetPanicOnFault": Host, "SetTraceback": Host, "WriteHeapDump": Write, "FreeOSMemory": Host, "SetCrashOutput": Write}},
	"runtime/pprof":     {all: Host},
	"runtime/trace":     {all: Host},
	"reflect":           {except: map[string]Rule{"NewAt": Unsafe, "Value.UnsafeAddr": Unsafe, "Value.UnsafePointer": Unsafe, "Value.SetPointer": Unsafe, "Value.Pointer": Unsafe, "SliceAt": Unsafe, "Value.Call": Reflect, "Value.CallSlice": Reflect, "Value.Method": Reflect, "Value.MethodByName": Reflect, "MakeFunc": Reflect}},
	"log":               {except: map[string]Rule{"Fatal": Exec, "Fatalf": Exec, "Fatalln": Exec, "Logger.Fatal": Exec, "Logger.Fatalf": Exec, "Logger.Fatalln": Exec}},
	"flag":              {except: map[string]Rule{"Parse": Host, "Args": Host, "Arg": Host, "NArg": Host, "NFlag": Host, "Parsed": Host, "CommandLine": Host}},
	"mime":              {except: map[string]Rule{"TypeByExtension": Host, "ExtensionsByType": Host, "AddExtensionType": Host}},
	"html/template":     {except: map[string]Rule{"ParseFiles": FS, "ParseGlob": FS, "Template.ParseFiles": FS, "Template.ParseGlob": FS}},
	"text/template":     {except: map[string]Rule{"ParseFiles": FS, "ParseGlob": FS, "Template.ParseFiles": FS, "Template.ParseGlob": FS}},
	"archive/zip":       {except: map[string]Rule{"OpenReader": FS}},
	"debug/elf":         {except: map[string]Rule{"Open": FS}},
	"debug/macho":       {except: map[string]Rule{"Open": FS, "OpenFat": FS}},
	"debug/pe":          {except: map[string]Rule{"Open": FS}},
	"debug/plan9obj":    {except: map[string]Rule{"Open": FS}},
	"debug/buildinfo":   {except: map[string]Rule{"ReadFile": FS}},
	"go/build":          {all: Host},
	"go/importer":       {all: Host},
}

// classify returns the rule a standard library member falls under: pkg
// is its import path, name "Func", "Type.Method" or "Var". It returns ""
// for harmless members and for packages outside the table.
func classify(pkg, name string) Rule {
	spec, ok := stdSinks[pkg]
	if !ok {
		return ""
	}
	if r, ok := spec.except[name]; ok {
		return ruleOrNone(r)
	}
	if typ, _, isMethod := strings.Cut(name, "."); isMethod {
		if r, ok := spec.except[typ+".*"]; ok {
			return ruleOrNone(r)
		}
	}
	return spec.all
}

func ruleOrNone(r Rule) Rule {
	if r == allowed {
		return ""
	}
	return r
}

// Waits are standard library calls that read the clock only to wait or
// to set a deadline; they never put a time in the output, so they are
// not clock findings (classify already gives them no rule; this names
// them for the documentation).
var Waits = []string{"time.Sleep", "time.After", "time.AfterFunc", "time.NewTimer", "time.NewTicker", "time.Tick", "context.WithTimeout", "context.WithDeadline"}

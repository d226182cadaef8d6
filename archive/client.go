package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says how to reach the S3 server. The zero Config takes
// everything from the environment, the standard way: AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), AWS_REGION (or
// AWS_DEFAULT_REGION), and AWS_ENDPOINT_URL for a server that is not AWS.
type Config struct {
	Endpoint  string // URL, e.g. http://127.0.0.1:7070; "" = AWS_ENDPOINT_URL, else AWS S3
	AccessKey string
	SecretKey string
	Region    string
}

// fromEnv fills what c leaves empty from the environment.
func (c Config) fromEnv() Config {
	set := func(dst *string, keys ...string) {
		for _, k := range keys {
			if *dst == "" {
				*dst = os.Getenv(k)
			}
		}
	}
	set(&c.Endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	set(&c.AccessKey, "AWS_ACCESS_KEY_ID")
	set(&c.SecretKey, "AWS_SECRET_ACCESS_KEY")
	set(&c.Region, "AWS_REGION", "AWS_DEFAULT_REGION")
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	return c
}

// Client is an S3 client bound to one Location, counting its requests
// and bytes. It is safe for concurrent use.
type Client struct {
	loc Location
	s3  *minio.Client
	// Requests and bytes moved, by kind.
	gets, getBytes, puts, putBytes atomic.Int64
}

// Stats is a Client's traffic so far.
type Stats struct {
	Gets, GetBytes, Puts, PutBytes int64
}

// Sub is the traffic since an earlier Stats.
func (s Stats) Sub(o Stats) Stats {
	return Stats{s.Gets - o.Gets, s.GetBytes - o.GetBytes, s.Puts - o.Puts, s.PutBytes - o.PutBytes}
}

// Stats is the client's traffic so far.
func (c *Client) Stats() Stats {
	return Stats{c.gets.Load(), c.getBytes.Load(), c.puts.Load(), c.putBytes.Load()}
}

// Dial makes a client of the archive at loc (s3://bucket/prefix). It does
// not contact the server; Check does.
func Dial(loc string, cfg Config) (*Client, error) {
	l, err := ParseLocation(loc)
	if err != nil {
		return nil, err
	}
	return DialLocation(l, cfg)
}

// DialLocation is Dial with a parsed location.
func DialLocation(l Location, cfg Config) (*Client, error) {
	cfg = cfg.fromEnv()
	host, secure := "s3.amazonaws.com", true
	if cfg.Region != "" && cfg.Endpoint == "" {
		host = "s3." + cfg.Region + ".amazonaws.com"
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("archive: endpoint %q: want http://host:port or https://host", cfg.Endpoint)
		}
		host, secure = u.Host, u.Scheme == "https"
	}
	var creds *credentials.Credentials
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, os.Getenv("AWS_SESSION_TOKEN"))
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{}})
	}
	s3, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region,
		BucketLookup: minio.BucketLookupPath, MaxRetries: 2})
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return &Client{loc: l, s3: s3}, nil
}

// Location is the client's archive location.
func (c *Client) Location() Location { return c.loc }

// Check asks the server whether the bucket is there and the keys may
// use it.
func (c *Client) Check(ctx context.Context) error {
	ok, err := c.s3.BucketExists(ctx, c.loc.Bucket)
	if err != nil {
		return c.wrap("check bucket", "", err)
	}
	if !ok {
		return fmt.Errorf("archive %s: %w %q on the server (make it first)", c.loc, ErrNoBucket, c.loc.Bucket)
	}
	return nil
}

// Put stores b as the object key (a key under the location's prefix).
func (c *Client) Put(ctx context.Context, key string, b []byte) error {
	return c.PutReader(ctx, key, bytes.NewReader(b), int64(len(b)))
}

// PutReader stores size bytes from r as the object key.
func (c *Client) PutReader(ctx context.Context, key string, r io.Reader, size int64) error {
	c.puts.Add(1)
	_, err := c.s3.PutObject(ctx, c.loc.Bucket, c.loc.Key(key), r, size,
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: size < 64<<20})
	if err != nil {
		return c.wrap("put", key, err)
	}
	c.putBytes.Add(size)
	return nil
}

// Get reads the whole object key. A missing object is an error wrapping
// ErrNotFound.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	return c.get(ctx, key, -1, 0)
}

// GetRange reads n bytes of the object key from off (one range request).
func (c *Client) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	return c.get(ctx, key, off, n)
}

func (c *Client) get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	var opts minio.GetObjectOptions
	if off >= 0 {
		if err := opts.SetRange(off, off+n-1); err != nil {
			return nil, err
		}
	}
	c.gets.Add(1)
	obj, err := c.s3.GetObject(ctx, c.loc.Bucket, c.loc.Key(key), opts)
	if err != nil {
		return nil, c.wrap("get", key, err)
	}
	defer obj.Close()
	var b []byte
	if n > 0 {
		b = make([]byte, n)
		_, err = io.ReadFull(obj, b)
	} else {
		b, err = io.ReadAll(obj)
	}
	if err != nil {
		return nil, c.wrap("get", key, err)
	}
	c.getBytes.Add(int64(len(b)))
	return b, nil
}

// Size is the size of the object key.
func (c *Client) Size(ctx context.Context, key string) (int64, error) {
	st, err := c.s3.StatObject(ctx, c.loc.Bucket, c.loc.Key(key), minio.StatObjectOptions{})
	if err != nil {
		return 0, c.wrap("stat", key, err)
	}
	return st.Size, nil
}

// List returns the keys (relative to the location's prefix) of the
// objects whose key starts with prefix.
func (c *Client) List(ctx context.Context, prefix string) ([]string, error) {
	full := c.loc.Key(prefix)
	if strings.HasSuffix(prefix, "/") {
		full += "/"
	}
	base := c.loc.Prefix
	if base != "" {
		base += "/"
	}
	var keys []string
	for o := range c.s3.ListObjects(ctx, c.loc.Bucket, minio.ListObjectsOptions{Prefix: full, Recursive: true}) {
		if o.Err != nil {
			return nil, c.wrap("list", prefix, o.Err)
		}
		keys = append(keys, strings.TrimPrefix(o.Key, base))
	}
	return keys, nil
}

// ListDirs returns the names of the "directories" right under prefix.
func (c *Client) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	full := c.loc.Key(prefix)
	if full != "" {
		full += "/"
	}
	var dirs []string
	for o := range c.s3.ListObjects(ctx, c.loc.Bucket, minio.ListObjectsOptions{Prefix: full}) {
		if o.Err != nil {
			return nil, c.wrap("list", prefix, o.Err)
		}
		if name, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, full), "/"); ok && name != "" {
			dirs = append(dirs, name)
		}
	}
	return dirs, nil
}

// Remove deletes the object key.
func (c *Client) Remove(ctx context.Context, key string) error {
	if err := c.s3.RemoveObject(ctx, c.loc.Bucket, c.loc.Key(key), minio.RemoveObjectOptions{}); err != nil {
		return c.wrap("remove", key, err)
	}
	return nil
}

// ErrNotFound is wrapped by errors for an object that is not there.
var ErrNotFound = errors.New("no such object")

// ErrNoBucket is wrapped by errors for a bucket the server does not have.
var ErrNoBucket = errors.New("no bucket")

// ErrDenied is wrapped by errors the server answers for the keys: a
// wrong access key or secret, or no permission (403).
var ErrDenied = errors.New("access denied")

// wrap says what failed where, in the server's words, and marks the
// errors callers act on.
func (c *Client) wrap(op, key string, err error) error {
	where := c.loc.String()
	if key != "" {
		where = "s3://" + c.loc.Bucket + "/" + c.loc.Key(key)
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket":
		return fmt.Errorf("archive: %s %s: %w", op, where, ErrNotFound)
	case resp.StatusCode == http.StatusForbidden || resp.Code == "AccessDenied" || resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch":
		return fmt.Errorf("archive: %s %s: %w: %s (%s; check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", op, where, ErrDenied, resp.Code, resp.Message)
	case resp.Code == "NoSuchBucket":
		return fmt.Errorf("archive: %s %s: %w %q on the server", op, where, ErrNoBucket, c.loc.Bucket)
	case resp.Code != "":
		return fmt.Errorf("archive: %s %s: %s: %s (HTTP %d)", op, where, resp.Code, resp.Message, resp.StatusCode)
	}
	return fmt.Errorf("archive: %s %s: %w", op, where, err)
}

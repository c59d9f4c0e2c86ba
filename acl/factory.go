package acl

import "fmt"

// NewProviderByName builds a provider for zoo.cfg's authProvider.N=<name>.
// name is a scheme of this package or the ZooKeeper class implementing it:
//
//	ip      org.apache.zookeeper.server.auth.IPAuthenticationProvider
//	digest  org.apache.zookeeper.server.auth.DigestAuthenticationProvider
//	x509    org.apache.zookeeper.server.auth.X509AuthenticationProvider
//	        param "superUser" (also "X509AuthenticationProvider.superUser")
//	usersfile  param "path" (also "usersfile.path"): the users file
//	sasl    org.apache.zookeeper.server.auth.SASLAuthenticationProvider
//	        param "letAnySaslUserDoX"
//
// params may be the whole set of extra zoo.cfg keys; each key is also looked
// up with a "zookeeper." prefix, as ZooKeeper turns zoo.cfg keys into
// system properties. Other ZooKeeper classes are
// ErrUnsupportedProvider; anything else is ErrUnknownProvider.
func NewProviderByName(name string, params map[string]string) (Provider, error) {
	switch name {
	case SchemeIP, javaAuthPackage + "IPAuthenticationProvider":
		return IPProvider{}, nil
	case SchemeDigest, javaAuthPackage + "DigestAuthenticationProvider":
		return DigestProvider{}, nil
	case SchemeX509, javaAuthPackage + "X509AuthenticationProvider":
		return NewX509Provider(param(params, "superUser", "X509AuthenticationProvider.superUser")), nil
	case SchemeUsersFile:
		return newUsersFileFromParams(params)
	case SchemeSASL, javaAuthPackage + "SASLAuthenticationProvider":
		return SASLProvider{AnyUser: param(params, "letAnySaslUserDoX")}, nil
	case javaAuthPackage + "EnsembleAuthenticationProvider", javaAuthPackage + "KeyAuthenticationProvider":
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedProvider, name)
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownProvider, name)
}

// javaAuthPackage is the Java package of ZooKeeper's providers.
const javaAuthPackage = "org.apache.zookeeper.server.auth."

// newUsersFileFromParams builds the usersfile provider.
func newUsersFileFromParams(params map[string]string) (Provider, error) {
	path := param(params, "path", "usersfile.path")
	if path == "" {
		return nil, fmt.Errorf("%w: usersfile needs a path", ErrBadParams)
	}
	return NewUsersFileProvider(path)
}

// param returns the first of keys (each also tried with a "zookeeper."
// prefix) present in params, or "".
func param(params map[string]string, keys ...string) string {
	for _, k := range keys {
		for _, key := range []string{k, "zookeeper." + k} {
			if v, ok := params[key]; ok {
				return v
			}
		}
	}
	return ""
}

// Command sdkgen writes the SDKs `pulumi package add` generates for a TypeScript and a Python program from
// the component package's schema, with Pulumi's own code generators at the version go.mod pins, so that the
// consumer examples (examples/package-consumer/typescript, python) are type-checked against what a user gets,
// without a Pulumi CLI (make consumers).
//
//	sdkgen -schema build/sdks/schema.json -out build/sdks
//
// writes <out>/nodejs/<namespace>-<name>/ and <out>/python/<namespace>-<name>/, the folder names the CLI gives
// them under a program's sdks/.
//
// It does what the CLI does for `pulumi package add` (pulumi/pulumi pkg/cmd/pulumi/packages/packages.go,
// InstallPackage and GenSDK; the language hosts' GeneratePackage in sdk/nodejs/cmd/pulumi-language-nodejs and
// sdk/python/cmd/pulumi-language-python main.go): bind the schema allowing dangling references, set SupportPack,
// generate a local SDK. One difference: the CLI loads a referenced package's schema from its plugin, which
// needs the plugin itself; here each package in the schema's `dependencies` is a package of its provider
// alone, at that version. The generators name another package's provider from its token and name only
// (codegen/nodejs/gen.go resourceType, getTypeImportsForResource: `@pulumi/<name>`; codegen/python/gen.go
// resourceType: `pulumi_<name>.Provider`) and take the dependency's version from the descriptor, so the code is
// the same; a schema that references anything else of another package fails to bind here, loudly.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// tool is the name the generated files credit, as the language hosts pass it.
var tool = map[string]string{"nodejs": "pulumi-language-nodejs", "python": "pulumi-language-python"}

// refusing loads no package: every package the schema may reference is pre-loaded in the cache in front of it.
type refusing struct{}

func (refusing) LoadPackage(pkg string, version *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema references package %s %v, which is not in its dependencies", pkg, version)
}

func (l refusing) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return l.LoadPackage(d.Name, d.Version)
}

func (l refusing) LoadPackageReference(pkg string, version *semver.Version) (schema.PackageReference, error) {
	_, err := l.LoadPackage(pkg, version)
	return nil, err
}

func (l refusing) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return l.LoadPackageReference(d.Name, d.Version)
}

// providerOnly is the dependency `d` as a package of its provider resource alone.
func providerOnly(d schema.PackageDescriptor) (*schema.Package, error) {
	if d.Version == nil || d.Parameterization != nil {
		return nil, fmt.Errorf("dependency %s: a version and no parameterization expected", d.Name)
	}
	spec := schema.PackageSpec{Name: d.Name, Version: d.Version.String(), Provider: &schema.ResourceSpec{}}
	pkg, diags, err := schema.BindSpec(spec, refusing{}, schema.ValidationOptions{})
	if err == nil && diags.HasErrors() {
		err = diags
	}
	return pkg, err
}

func generate(language string, pkg *schema.Package, loader schema.ReferenceLoader) (map[string][]byte, error) {
	switch language {
	case "nodejs":
		// local: true, as `pulumi package add` generates (packages.go InstallPackage).
		return nodejs.GeneratePackage(tool[language], pkg, nil, nil, true, loader)
	case "python":
		return python.GeneratePackage(tool[language], pkg, nil, loader)
	}
	return nil, fmt.Errorf("unknown language %q", language)
}

func write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func run(schemaPath, out string) error {
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	entries := map[string]schema.PackageReference{}
	for _, d := range spec.Dependencies {
		dep, err := providerOnly(d)
		if err != nil {
			return err
		}
		entries[dep.Identity()] = dep.Reference()
	}
	for _, language := range []string{"nodejs", "python"} {
		// Bound once per language: a generator records its language's settings in the package.
		loader := schema.NewCachedLoaderWithEntries(refusing{}, entries)
		pkg, diags, err := schema.BindSpec(spec, loader, schema.ValidationOptions{AllowDanglingReferences: true})
		if err == nil && diags.HasErrors() {
			err = errors.Join(diags.Errs()...)
		}
		if err != nil {
			return fmt.Errorf("binding %s: %w", schemaPath, err)
		}
		pkg.SupportPack = true
		files, err := generate(language, pkg, loader)
		if err != nil {
			return fmt.Errorf("%s SDK: %w", language, err)
		}
		name := pkg.Name
		if pkg.Namespace != "" {
			name = pkg.Namespace + "-" + name
		}
		if err := write(filepath.Join(out, language, name), files); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	schemaPath := flag.String("schema", "", "the package schema (JSON), as GetSchema returns it")
	out := flag.String("out", "", "the folder to write <language>/<namespace>-<name>/ in")
	flag.Parse()
	if *schemaPath == "" || *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: sdkgen -schema <schema.json> -out <folder>")
		os.Exit(2)
	}
	if err := run(*schemaPath, *out); err != nil {
		fmt.Fprintln(os.Stderr, "sdkgen:", err)
		os.Exit(1)
	}
}

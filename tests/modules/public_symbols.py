#!/usr/bin/env python3
"""What a module host must export, and whether a host and a module agree.

  public_symbols.py list   --clang CLANG -I DIR... HEADER_ROOT...
  public_symbols.py check  --clang CLANG -I DIR... --host EXE --module SO [HEADER_ROOT...]

list: every function declared in herd's public headers (the HEADER_ROOTs,
e.g. runtime/include) that has no definition there: not a template, not
inline, not defined in its class, not constexpr, not deleted or defaulted
(and any extern variable or out-of-line static data member). Those live in herd's archives, and a module that calls one (directly, or
through an inline function or template of the headers) needs the host to
export it. Found with clang's AST of a file that includes every header.

check: (1) the module references every one of them (so the "every public
function" module has not fallen behind the headers; skipped without
HEADER_ROOTs), and (2) every herd symbol the module leaves undefined is
exported by the host (nm -D). Prints what is missing and exits 1.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

DEFINED_KINDS = {"FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl",
                 "CXXDestructorDecl", "CXXConversionDecl"}
# Under these nothing is an exported definition: templates are instantiated
# in the module, and an anonymous namespace is the header's own.
SKIP_PARENTS = {"FunctionTemplateDecl", "ClassTemplateDecl",
                "ClassTemplatePartialSpecializationDecl", "VarTemplateDecl",
                "TypeAliasTemplateDecl", "ConceptDecl"}


def headers_under(roots):
    out = []
    for root in roots:
        for d, _, files in os.walk(root):
            out += [os.path.relpath(os.path.join(d, f), root) for f in files if f.endswith(".hpp")]
    return sorted(out)


def ast_nodes(clang, includes, roots):
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as tu:
        for h in headers_under(roots):
            tu.write(f"#include <{h}>\n")
        name = tu.name
    try:
        cmd = [clang, "-x", "c++", "-std=c++20", "-fsyntax-only", "-Xclang", "-ast-dump=json",
               "-Xclang", "-ast-dump-filter=herd"]
        cmd += [f"-I{d}" for d in list(roots) + list(includes)] + [name]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True)
        except FileNotFoundError:
            sys.exit(f"no {clang}: the header walk needs clang++ (tools/setup.sh installs it)")
        if done.returncode != 0:
            sys.exit(f"{clang} could not parse herd's public headers:\n{done.stderr}")
        text = done.stdout
    finally:
        os.unlink(name)
    # The filter prints one JSON document per matching declaration.
    dec, pos = json.JSONDecoder(), 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        node, pos = dec.raw_decode(text, pos)
        yield node


def has_body(node):
    return any(c.get("kind") == "CompoundStmt" or c.get("kind") == "CXXTryStmt"
               for c in node.get("inner", []))


def public_functions(clang, includes, roots):
    """mangled name -> readable name, for functions defined outside the headers."""
    declared, defined_in_header = {}, set()

    def walk(node, skip, parent):
        kind = node.get("kind")
        if kind in SKIP_PARENTS or (kind == "NamespaceDecl" and not node.get("name")):
            skip = True
        if kind in DEFINED_KINDS and not skip and not node.get("isImplicit"):
            m = node.get("mangledName")
            inline = (node.get("inline") or node.get("constexpr") or node.get("explicitlyDeleted")
                      or node.get("explicitlyDefaulted") or node.get("pure"))
            if m and m.startswith("_Z"):
                if inline or has_body(node):
                    defined_in_header.add(m)
                else:
                    declared.setdefault(m, node.get("name", m))
        # An extern variable, or a static data member defined out of line.
        if (kind == "VarDecl" and not skip and parent in ("NamespaceDecl", "CXXRecordDecl")
                and node.get("storageClass") in ("extern", "static") and not node.get("constexpr")
                and not node.get("inline") and "init" not in node):
            m = node.get("mangledName", "")
            if m.startswith("_Z"):
                declared.setdefault(m, node.get("name", m))
        for c in node.get("inner", []):
            walk(c, skip, kind)

    for n in ast_nodes(clang, includes, roots):
        walk(n, False, None)
    return {m: n for m, n in declared.items() if m not in defined_in_header}


def nm(path, *flags):
    out = subprocess.run(["nm", "-D", *flags, path], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def is_herd(sym):
    # _ZN4herd..., _ZNK4herd..., _ZTVN4herd... (vtables, typeinfo) and the like.
    return "4herd" in sym[:12]


def demangle(syms):
    if not syms:
        return []
    out = subprocess.run(["c++filt"], input="\n".join(syms), capture_output=True, text=True).stdout
    return out.splitlines()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["list", "check"])
    ap.add_argument("roots", nargs="*")
    ap.add_argument("--clang", default="clang++")
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("--host")
    ap.add_argument("--module")
    a = ap.parse_intermixed_args()
    public = public_functions(a.clang, a.includes, a.roots) if a.roots else {}
    if a.what == "list":
        for line in sorted(demangle(sorted(public))):
            print(line)
        return 0
    if a.roots and not public:
        print("no public functions found in", a.roots)
        return 1
    wanted = nm(a.module, "--undefined-only")
    exported = nm(a.host, "--defined-only")
    # Clang and g++ agree on the Itanium mangling except where g++ adds an ABI tag
    # clang leaves out; compare what c++filt makes of both, without "[abi:cxx11]".
    plain = lambda s: s.replace("[abi:cxx11]", "")
    wanted_readable = {plain(d) for d in demangle(sorted(wanted))}
    not_referenced = sorted(plain(d) for d in demangle(sorted(public)) if plain(d) not in wanted_readable)
    herd_wanted = sorted(s for s in wanted if is_herd(s))
    not_exported = [d for s, d in zip(herd_wanted, demangle(herd_wanted)) if s not in exported]
    if a.roots:
        print(f"{len(public)} public functions in the headers; the module references "
              f"{len(public) - len(not_referenced)} of them")
    print(f"the module needs {len(herd_wanted)} herd symbols; the host exports "
          f"{len(herd_wanted) - len(not_exported)} of them")
    for d in not_referenced:
        print("  the module does not reference:", d)
    for d in not_exported:
        print("  the host does not export:", d)
    return 1 if not_referenced or not_exported else 0


if __name__ == "__main__":
    sys.exit(main())

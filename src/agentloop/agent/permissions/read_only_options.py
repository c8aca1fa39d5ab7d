"""The options each read-only program keeps read-only with: an allow-list, so an option not listed
(a new one, an abbreviation, one that writes or runs a program) makes the line ask.

Each entry is ``(short, long)``: ``short`` in getopt's spelling (a letter followed by ``:`` takes a value,
stuck to it or the next word); ``long`` the full names, ``name=`` for one that takes a value (``--name=V``
or ``--name V``). GNU programs accept abbreviations of long options; an abbreviation is not listed, so it
asks (``--o`` could be ``--output``). Programs whose arguments are not options (``echo``, ``test``, ``find``
expressions, ``git`` with its own check) are in ``FREE``.

No option that follows the symbolic links met while recursing is listed (``grep -R``, ``rg -L``, ``ls -L``,
``du -L``, ``tree -l``): the operands are checked at their real paths, but a link deep inside a folder is
not, so such a line asks (``diff -r`` follows links unless ``--no-dereference``: ``rules`` asks for that).
Nor is one that opens files a list in a file names (``md5sum -c``, ``file -f``, ``--files0-from``).
"""

from __future__ import annotations

__all__ = ["FREE", "OPTIONS", "options_read_only"]


def _l(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SUMS = ("btwz", _l("binary tag text zero help version"))
"""No ``-c``/``--check``: it opens every file a list names, wherever (``/etc/shadow: OK``)."""
_GREP = ("EFGPiyvwxcLlmoqsbHhnTZzrUaIe:f:m:A:B:C:d:D:", _l(
    "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case word-regexp "
    "line-regexp null-data no-messages invert-match max-count= byte-offset line-number no-line-number line-buffered "
    "with-filename no-filename label= only-matching quiet silent binary-files= text directories= devices= recursive "
    "include= exclude= exclude-from= exclude-dir= files-without-match files-with-matches count "
    "initial-tab null color colour color= colour= after-context= before-context= context= help version"))
OPTIONS: dict[str, tuple[str, frozenset[str]]] = {
    "ls": ("1aAbBcCdfFgGhHiklmnNopqQrRsStuUvxXZI:T:w:", _l(
        "all almost-all author escape block-size= ignore-backups color color= directory dired classify classify= "
        "file-type format= full-time group-directories-first no-group human-readable si dereference-command-line "
        "dereference-command-line-symlink-to-dir hide= hyperlink hyperlink= indicator-style= inode ignore= kibibytes "
        "literal numeric-uid-gid hide-control-chars show-control-chars quote-name quoting-style= reverse recursive "
        "size sort= time= time-style= tabsize= width= context zero help version")),
    "cat": ("AbeEnstTuv", _l("show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting help version")),
    "head": ("c:n:qvz", _l("bytes= lines= quiet silent verbose zero-terminated help version")),
    "tail": ("c:n:fFqvzs:", _l("bytes= lines= follow follow= quiet silent verbose zero-terminated retry sleep-interval= "
                              "pid= max-unchanged-stats= help version")),
    "wc": ("clmwL", _l("bytes chars lines words max-line-length total= help version")),
    "pwd": ("LP", _l("logical physical help version")),
    "grep": _GREP, "egrep": _GREP, "fgrep": _GREP,
    "rg": ("iswxvnNlcoFHIu0e:g:t:T:m:A:B:C:d:r:M:", _l(
        "hidden no-ignore no-ignore-vcs no-ignore-parent glob= iglob= type= type-not= files files-with-matches "
        "files-without-match count count-matches fixed-strings ignore-case smart-case case-sensitive word-regexp "
        "line-regexp line-number no-line-number max-count= context= after-context= before-context= json vimgrep "
        "no-heading heading color= max-depth= multiline multiline-dotall sort= sortr= stats only-matching "
        "replace= trim column with-filename no-filename null invert-match regexp= max-columns= max-filesize= "
        "type-list unrestricted text no-messages quiet pcre2 help version")),
    "file": ("bchikLNnprsvzZ0e:F:m:P:", _l("brief mime mime-type mime-encoding dereference no-dereference no-pad "
                                           "print0 special-files uncompress keep-going raw separator= help version")),
    "stat": ("LfctT", _l("dereference file-system format= printf= terse cached= help version")),
    "du": ("0abcDhHklmPsSxX:d:B:t:", _l(
        "all apparent-size bytes total human-readable si summarize max-depth= dereference-args "
        "no-dereference one-file-system exclude= exclude-from= threshold= block-size= inodes count-links time time= "
        "time-style= null separate-dirs help version")),
    "df": ("ahHiklPTvxB:t:", _l("all human-readable si inodes local portability print-type total type= exclude-type= "
                                "output output= block-size= sync no-sync help version")),
    "which": ("as", _l("all")),
    "type": ("afptP", frozenset()),
    "whoami": ("", _l("help version")),
    "id": ("agGnruzZ", _l("context group groups name real user zero help version")),
    "uname": ("asnrvmpio", _l("all kernel-name nodename kernel-release kernel-version machine processor "
                              "hardware-platform operating-system help version")),
    "tree": ("adfFixpugshDrtvUcCnNqQJL:P:I:", _l("noreport charset= filelimit= timefmt= dirsfirst filesfirst prune "
                                                "gitignore matchdirs ignore-case du si sort= help version")),
    "diff": ("iEZbwBIaqsyNtTupcrlC:U:x:X:S:F:I:W:", _l(
        "brief report-identical-files unified unified= context context= side-by-side recursive new-file "
        "unidirectional-new-file ignore-case ignore-file-name-case ignore-tab-expansion ignore-trailing-space "
        "ignore-all-space ignore-space-change ignore-blank-lines ignore-matching-lines= text strip-trailing-cr "
        "exclude= exclude-from= minimal speed-large-files color color= normal no-dereference label= expand-tabs "
        "initial-tab suppress-common-lines left-column width= show-c-function show-function-line= from-file= "
        "to-file= horizon-lines= starting-file= paginate-no help version")),
    "cmp": ("bilsn:", _l("print-bytes ignore-initial= verbose quiet silent bytes= help version")),
    "cut": ("b:c:f:d:nsz", _l("bytes= characters= fields= delimiter= complement only-delimited output-delimiter= "
                               "zero-terminated help version")),
    "tr": ("cdstC", _l("complement delete squeeze-repeats truncate-set1 help version")),
    "basename": ("as:z", _l("multiple suffix= zero help version")),
    "dirname": ("z", _l("zero help version")),
    "realpath": ("eLmPqsz", _l("canonicalize-existing canonicalize-missing logical physical quiet relative-to= "
                               "relative-base= strip no-symlinks zero help version")),
    "readlink": ("efmnqsvz", _l("canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent "
                                "verbose zero help version")),
    "nl": ("pb:d:f:h:i:l:n:s:v:w:", _l("body-numbering= section-delimiter= footer-numbering= header-numbering= "
                                      "line-increment= join-blank-lines= number-format= no-renumber number-separator= "
                                      "starting-line-number= number-width= help version")),
    "od": ("abcdfilosxvA:j:N:t:S:w:", _l("address-radix= endian= skip-bytes= read-bytes= format= output-duplicates "
                                       "strings strings= width width= traditional help version")),
    "hexdump": ("bcCdovxe:f:n:s:", frozenset()),
    "md5sum": _SUMS, "sha1sum": _SUMS, "sha256sum": _SUMS, "sha512sum": _SUMS,
    "cksum": ("a:l:", _l("algorithm= untagged base64 raw length= tag zero help version")),
    "column": ("tnxeJLs:c:o:N:R:W:H:O:d", _l("table separator= output-separator= columns= fillrows table-columns= "
                                             "table-right= table-wrap= table-noheadings table-hide= json help version")),
    "fold": ("bsw:", _l("bytes spaces width= help version")),
    "fmt": ("cstuw:p:g:", _l("crown-margin split-only tagged-paragraph uniform-spacing width= prefix= goal= help version")),
    "paste": ("szd:", _l("serial delimiters= zero-terminated help version")),
    "comm": ("123iz", _l("check-order nocheck-order output-delimiter= total zero-terminated help version")),
    "join": ("izt:o:e:a:v:j:1:2:", _l("ignore-case check-order nocheck-order header zero-terminated help version")),
    "seq": ("wf:s:", _l("equal-width format= separator= help version")),
    "tac": ("brs:", _l("before regex separator= help version")),
    "rev": ("0", _l("zero help version")),
    "expand": ("it:", _l("initial tabs= help version")),
    "unexpand": ("at:", _l("all first-only tabs= help version")),
    "strings": ("afdwn:t:e:s:T:", _l("all data bytes= radix= encoding= output-separator= target= include-all-whitespace "
                                     "print-file-name help version")),
    "jq": ("rjcnesSCMaRf:L:", _l("raw-output join-output compact-output null-input exit-status slurp sort-keys "
                                 "color-output monochrome-output ascii-output raw-input tab indent= arg= argjson= "
                                 "slurpfile= rawfile= args jsonargs from-file= seq stream raw-output0 help version")),
    "sort": ("bdfgiMhnRrVcCmsuzk:t:S:", _l(
        "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting month-sort "
        "human-numeric-sort numeric-sort random-sort reverse version-sort check check= merge stable unique "
        "zero-terminated key= field-separator= buffer-size= parallel= random-source= sort= debug help version")),
    "uniq": ("cdDiuzf:s:w:", _l("count repeated all-repeated all-repeated= unique ignore-case skip-fields= skip-chars= "
                                "check-chars= zero-terminated group group= help version")),
    "cd": ("LPe@", frozenset()),
    "date": ("Rud:f:I:r:", _l("date= file= iso-8601 iso-8601= rfc-email rfc-3339= reference= utc universal debug "
                              "help version")),
}
FREE = frozenset({"echo", "printf", "test", "[", "true", "false", "find", "git"})
"""Programs whose arguments are not options to judge here (their own checks are in ``rules``)."""
_NUMBERS = frozenset({"head", "tail"})
"""``head -5``, ``tail -20``: the old count spelling."""


def options_read_only(head: str, args: list[str]) -> bool:
    """Is every option of ``head args`` one ``OPTIONS`` lists for it? (Operands are judged elsewhere.)"""
    if head in FREE:
        return True
    spec = OPTIONS.get(head)
    if spec is None:
        return False
    shorts, longs = spec
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return True
        if a.startswith("--"):
            name, eq, _value = a[2:].partition("=")
            if name + "=" in longs:
                i += 0 if eq else 1  # the value is the next word
            elif name not in longs or eq:
                return False
        elif a.startswith("-") and a != "-" and not (head in _NUMBERS and a[1:].isdigit()):
            if not _short_ok(a[1:], shorts):
                return False
            if _takes_next(a[1:], shorts):
                i += 1
        i += 1
    return True


def _short_ok(body: str, shorts: str) -> bool:
    for ch in body:
        pos = shorts.find(ch)
        if ch == ":" or pos < 0:
            return False
        if shorts[pos + 1 : pos + 2] == ":":
            return True  # the rest of the word is its value
    return True


def _takes_next(body: str, shorts: str) -> bool:
    """Does the cluster end in an option whose value is the next word (``-n 5``, ``-rA 3``)?"""
    for k, ch in enumerate(body):
        pos = shorts.find(ch)
        if shorts[pos + 1 : pos + 2] == ":":
            return k == len(body) - 1
    return False

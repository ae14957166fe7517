#!/bin/sh
# Vulkan for llama.cpp's Vulkan backend over Mesa's software device, lavapipe (tox -e vulkan).
#   vulkan.sh install DIR   Debian 12's Vulkan loader, glslc, SPIR-V headers, Mesa's Vulkan drivers and
#                           vulkaninfo, if missing; and into DIR (once) Vulkan headers new enough for
#                           llama.cpp: Debian 12's 1.3.239 lack VK_EXT_layer_settings, which ggml-vulkan.cpp
#                           uses. Debian 13's libvulkan-dev is unpacked there, not installed: the system's
#                           packages and apt sources are left as they were. Point VULKAN_SDK at DIR/usr.
set -eu
[ "${1:-}" = install ] && [ -n "${2:-}" ] || { echo "usage: vulkan.sh install DIR" >&2; exit 2; }
dir=$2
if ! command -v glslc >/dev/null || ! command -v vulkaninfo >/dev/null || [ ! -f /usr/include/vulkan/vulkan.h ] \
   || [ ! -d /usr/share/cmake/SPIRV-Headers ] || ! ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libvulkan-dev glslc spirv-headers mesa-vulkan-drivers vulkan-tools >/dev/null
fi
if grep -q VK_EXT_LAYER_SETTINGS_EXTENSION_NAME "$dir/usr/include/vulkan/vulkan_core.h" 2>/dev/null; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The Debian mirror this machine already uses, read from its own apt sources.
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
mkdir -p "$tmp/parts" "$tmp/lists/partial" "$tmp/cache/archives/partial"
printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" > "$tmp/parts/trixie.sources"
apt_private() {
    apt-get -qq -o APT::Sandbox::User=root -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$tmp/parts" \
        -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" "$@"
}
apt_private update
(cd "$tmp" && apt_private download libvulkan-dev)
mkdir -p "$dir"
dpkg-deb -x "$tmp"/libvulkan-dev_*.deb "$dir"
grep -q VK_EXT_LAYER_SETTINGS_EXTENSION_NAME "$dir/usr/include/vulkan/vulkan_core.h"

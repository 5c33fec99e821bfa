// Everything a herd actor program needs.
#pragma once
#include <herd/actors/call.hpp>
#include <herd/actors/error.hpp>
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/hibernate.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/node.hpp>
#include <herd/actors/pid.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/registry.hpp>
#include <herd/actors/result.hpp>
#include <herd/actors/send.hpp>
#include <herd/actors/server.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/actors/timers.hpp>

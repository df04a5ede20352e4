// Command cert-manager starts cert-manager's own controllers for the one-node cluster's
// `make cluster-addons` (hack/addons_tool.py).
//
// cert-manager ships its programs as Go modules of their own (controller-binary,
// cainjector-binary) that the module proxy does not serve; the controllers they start are in
// its main module, which is served. This is the entry point in their place, ours: it builds
// cert-manager's controller context, runs the controllers named below and its CA injector,
// and takes the arguments cert-manager's Helm chart passes them.
//
//	cert-manager controller [--v=N] [--cluster-resource-namespace=NS]
//	    [--leader-election-namespace=NS] [--enable-certificate-owner-ref[=true]]
//	    [--controllers=-name,...]
//	cert-manager cainjector [--v=N] [--leader-election-namespace=NS]
//
// Every other argument of the chart's is logged as not used. The credentials are the pod's
// service account, or $KUBECONFIG outside a cluster. What it does not start: the ACME,
// Vault and Venafi issuers, the CertificateSigningRequest signers and the ingress and
// Gateway shims (nothing on the test node uses them), and cert-manager's admission webhook
// (its server is in the main module's internal packages).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"golang.org/x/sync/errgroup"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	"github.com/cert-manager/cert-manager/pkg/healthz"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
)

// The controllers a SelfSigned or CA Issuer's Certificate needs, in cert-manager's names.
var controllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
	approver.ControllerName,
	crselfsigned.CRControllerName,
	crca.CRControllerName,
}

// cert-manager's defaults (its controller configuration's v1alpha1 defaults).
const (
	workers         = 5
	metricsAddress  = "0.0.0.0:9402"
	healthzAddress  = "0.0.0.0:9403"
	healthzTimeout  = 20 * time.Second
	leaseDuration   = 60 * time.Second
	renewDeadline   = 40 * time.Second
	retryPeriod     = 15 * time.Second
	controllerLease = "cert-manager-controller"
	cainjectorLease = "cert-manager-cainjector-leader-election"
)

// args are the `--name=value` arguments; a bare `--name` is "true".
type args map[string]string

func parse(component string, argv []string, known ...string) (args, error) {
	out := args{}
	for _, arg := range argv {
		name, value, found := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !strings.HasPrefix(arg, "--") || name == "" {
			return nil, fmt.Errorf("%s: %q is not a --name=value argument", component, arg)
		}
		if !found {
			value = "true"
		}
		if !slices.Contains(known, name) {
			klog.Infof("%s: argument --%s not used by this entry point", component, name)
			continue
		}
		out[name] = value
	}
	return out, nil
}

func (a args) get(name, fallback string) string {
	if value, ok := a[name]; ok {
		return value
	}
	return fallback
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "controller" && os.Args[1] != "cainjector") {
		fmt.Fprintln(os.Stderr, "usage: cert-manager controller|cainjector [--name=value ...]")
		os.Exit(2)
	}
	component := os.Args[1]
	known := []string{"v", "leader-election-namespace"}
	if component == "controller" {
		known = append(known, "cluster-resource-namespace", "enable-certificate-owner-ref", "controllers")
	}
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	options, err := parse(component, os.Args[2:], known...)
	if err == nil {
		err = klogFlags.Set("v", options.get("v", "2"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logf.InitLogs()
	defer logf.FlushLogs()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, component)
	if component == "controller" {
		err = runController(ctx, options)
	} else {
		err = runCAInjector(ctx, options)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logf.Log.Error(err, "exiting", "component", component)
		logf.FlushLogs()
		os.Exit(1)
	}
}

// enabled is `controllers`, less those the chart's --controllers=-name,... turns off.
func enabled(spec string) ([]string, error) {
	out := slices.Clone(controllers)
	for item := range strings.SplitSeq(spec, ",") {
		switch name := strings.TrimSpace(item); {
		case name == "" || name == "*":
		case strings.HasPrefix(name, "-"):
			out = slices.DeleteFunc(out, func(n string) bool { return n == name[1:] })
		case !slices.Contains(controllers, name):
			return nil, fmt.Errorf("--controllers: %q is not one this entry point runs (%s)",
				name, strings.Join(controllers, ", "))
		}
	}
	return out, nil
}

func runController(ctx context.Context, options args) error {
	log := logf.FromContext(ctx)
	names, err := enabled(options.get("controllers", ""))
	if err != nil {
		return err
	}
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         os.Getenv("KUBECONFIG"),
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace:        options.get("cluster-resource-namespace", "kube-system"),
			ClusterIssuerAmbientCredentials: true,
		},
		IngressShimOptions: controller.IngressShimOptions{
			DefaultIssuerKind:                 "Issuer",
			DefaultIssuerGroup:                "cert-manager.io",
			DefaultAutoCertificateAnnotations: []string{"kubernetes.io/tls-acme"},
		},
		CertificateOptions: controller.CertificateOptions{
			EnableOwnerRef: options.get("enable-certificate-owner-ref", "false") == "true",
			CopiedAnnotationPrefixes: []string{
				"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/",
			},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
		SchedulerOptions: controller.SchedulerOptions{MaxConcurrentChallenges: 60},
	})
	if err != nil {
		return err
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}
	group, ctx := errgroup.WithContext(ctx)
	health := healthz.NewServer(healthzTimeout)
	listener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", healthzAddress)
	if err != nil {
		return fmt.Errorf("healthz on %s: %w", healthzAddress, err)
	}
	group.Go(func() error { return health.Start(ctx, listener) })
	base.Metrics.SetupCertificateCollector(base.SharedInformerFactory.Certmanager().V1().Certificates().Lister())
	base.Metrics.SetupIssuerCollector(base.SharedInformerFactory.Certmanager().V1().Issuers().Lister())
	metricsListener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", metricsAddress)
	if err != nil {
		return fmt.Errorf("metrics on %s: %w", metricsAddress, err)
	}
	metrics := base.Metrics.NewServer(metricsListener)
	group.Go(func() error {
		<-ctx.Done()
		return metrics.Close()
	})
	group.Go(func() error {
		if err := metrics.Serve(metricsListener); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})

	elected := make(chan struct{})
	if namespace := options.get("leader-election-namespace", "kube-system"); namespace != "" {
		leaderCtx, err := factory.Build("leader-election")
		if err != nil {
			return err
		}
		lock, err := resourcelock.NewWithLabels(resourcelock.LeasesResourceLock, namespace,
			controllerLease, leaderCtx.Client.CoreV1(), leaderCtx.Client.CoordinationV1(),
			resourcelock.ResourceLockConfig{Identity: hostname(), EventRecorder: leaderCtx.Recorder},
			map[string]string{"app.kubernetes.io/managed-by": "cert-manager"})
		if err != nil {
			return err
		}
		group.Go(func() error { return lead(ctx, lock, health.LeaderHealthzAdaptor, elected) })
	} else {
		close(elected)
	}
	select {
	case <-ctx.Done():
		return group.Wait()
	case <-elected:
	}

	log.Info("starting controllers", "controllers", names)
	for _, name := range names {
		iface, err := controller.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		group.Go(func() error { return iface.Run(workers, ctx) })
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	return group.Wait()
}

// lead holds the controller's Lease as long as ctx lasts; losing it ends the process.
func lead(ctx context.Context, lock resourcelock.Interface, watchdog *leaderelection.HealthzAdaptor, elected chan struct{}) error {
	lost := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(elected) },
			OnStoppedLeading: func() { close(lost) },
		},
	})
	if err != nil {
		return err
	}
	elector.Run(ctx)
	select {
	case <-lost:
		if ctx.Err() == nil {
			return errors.New("leader election lost")
		}
	default:
	}
	return nil
}

func hostname() string {
	name, err := os.Hostname()
	if err != nil {
		name = "cert-manager"
	}
	return name + "-external-cert-manager-controller"
}

func runCAInjector(ctx context.Context, options args) error {
	ctrl.SetLogger(logf.FromContext(ctx)) // controller-runtime's logs, through cert-manager's
	config, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	config = util.RestConfigWithUserAgent(config, "cainjector")
	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))
	namespace := options.get("leader-election-namespace", "kube-system")
	lease, renew, retry := leaseDuration, renewDeadline, retryPeriod
	manager, err := ctrl.NewManager(config, ctrl.Options{
		Scheme: scheme,
		Cache:  cache.Options{ReaderFailOnMissingInformer: true},
		// Secrets are read when needed, never cached cluster-wide
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		LeaderElection:                namespace != "",
		LeaderElectionNamespace:       namespace,
		LeaderElectionID:              cainjectorLease,
		LeaderElectionReleaseOnCancel: true,
		LeaderElectionLabels:          map[string]string{"app.kubernetes.io/managed-by": "cert-manager-cainjector"},
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	err = cainjector.RegisterAllInjectors(ctx, manager, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	})
	if err != nil {
		return fmt.Errorf("registering the injectors: %w", err)
	}
	return manager.Start(ctx)
}
